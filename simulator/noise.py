"""Optional perception noise for sim-to-real robustness: timestamp jitter, dropped events, paraphrase.

Noise is deterministic per (seed, call): the same query gets the same noisy answer, as a cached real worker would.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Hashable

from pydantic import BaseModel, Field

Line = tuple[float, float, str]

# Small word swaps that keep the meaning, as a captioning model would rephrase.
_PARAPHRASES = {
    "person": "someone",
    "man": "guy",
    "woman": "lady",
    "holds": "is holding",
    "picks up": "grabs",
    "puts": "places",
    "walks": "moves",
    "small": "little",
    "large": "big",
    "cuts": "slices",
    "pours": "adds",
    "car": "vehicle",
    "shows": "displays",
    "near": "close to",
}


class Noise(BaseModel):
    """How far simulated observations stray from the script."""

    seed: int = 0
    jitter_seconds: float = Field(default=0.0, ge=0, description="Max shift of each reported time, seconds.")
    drop_probability: float = Field(default=0.0, ge=0, le=1, description="Chance each event is missed.")
    paraphrase_probability: float = Field(default=0.0, ge=0, le=1, description="Chance each line is reworded.")

    def apply(self, lines: list[Line], call: Hashable) -> list[Line]:
        # A stable digest, not hash(): str hashes change between processes.
        rng = random.Random(hashlib.sha256(repr((self.seed, call)).encode()).digest())
        noisy = []
        for start, end, text in lines:
            if rng.random() < self.drop_probability:
                continue
            if self.jitter_seconds:
                start = max(0.0, start + rng.uniform(-self.jitter_seconds, self.jitter_seconds))
                end = max(start + 0.1, end + rng.uniform(-self.jitter_seconds, self.jitter_seconds))
            if rng.random() < self.paraphrase_probability:
                text = paraphrase(text)
            noisy.append((start, end, text))
        return noisy


def paraphrase(text: str) -> str:
    for source, target in _PARAPHRASES.items():
        text = text.replace(source, target)
    return text
