"""Optional perception noise for sim-to-real robustness: timestamp jitter, dropped events, paraphrase, and visual
lines written as the real frame describer writes them (a rendered video's sentence read back as on-screen text, with
its colours), so a policy trained in the simulator meets the real observation format before serving.

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
    describer_probability: float = Field(
        default=0.0, ge=0, le=1, description="Chance each visual line is written as the frame describer writes it."
    )

    def apply(self, lines: list[Line], call: Hashable, visual: bool = True) -> list[Line]:
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
            if visual and rng.random() < self.describer_probability:
                text = described(text, rng)
            noisy.append((start, end, text))
        return noisy


def paraphrase(text: str) -> str:
    for source, target in _PARAPHRASES.items():
        text = text.replace(source, target)
    return text


# Backgrounds the renderer paints behind a sentence, as `agentcvr.perception.describer.colour_name` names them.
_BACKGROUNDS = ("dark blue", "dark red", "dark green", "purple", "dark pink", "dark cyan", "yellow", "grey")


def described(text: str, rng: random.Random) -> str:
    """'A dog runs.' -> 'Text on screen: "A dog runs."; colours: white 47%, dark blue 44%; something moves.'"""
    white = rng.randint(42, 49)
    background = rng.randint(20, 96 - white)
    line = f'Text on screen: "{text}"; colours: white {white}%, {rng.choice(_BACKGROUNDS)} {background}%'
    return line + ("; something moves." if rng.random() < 0.3 else ".")
