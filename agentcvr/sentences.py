"""Frozen sentence vectors (all-MiniLM-L6-v2, mean-pooled and normalized) for the reader, cached by text.

The reader's head is what trains; the encoder stays as the registry shipped it, so every sentence is embedded once
(the simulator's scripts repeat their sentences across episodes, and a server sees the same questions again). The
cache is bounded: a long-lived server stays flat.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

BATCH = 64
MAX_TOKENS = 128  # one sentence; longer ones are cut


class SentenceEncoder:
    """`SentenceEncoder(folder).vectors(texts)` -> a [len(texts), 384] tensor, one unit vector per text."""

    def __init__(self, folder: Path, cache_size: int = 50_000):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging

        logging.disable_progress_bar()  # a weight-loading bar on every reader load is noise in a trace or a log
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        self.width = int(self.model.config.hidden_size)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, torch.Tensor] = OrderedDict()

    def vectors(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> torch.Tensor:
        """Each text's vector, embedding only those not cached; `progress(n)` is told of every batch embedded."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh: dict[str, torch.Tensor] = {}
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            fresh.update(zip(batch, self._embed(batch), strict=True))
            if progress:
                progress(len(batch))
        found = [self._cache[t] if t in self._cache else fresh[t] for t in texts]
        for text in texts:
            self._remember(text, self._cache.get(text, fresh.get(text)))
        return torch.stack(found) if found else torch.zeros((0, self.width))

    def add(self, texts: Sequence[str], vectors: torch.Tensor) -> None:
        """Vectors embedded before (a fit's saved `sentences.pt`), so they are not embedded again."""
        for text, vector in zip(texts, vectors, strict=True):
            self._remember(text, vector)

    def cached(self) -> tuple[list[str], torch.Tensor]:
        texts = list(self._cache)
        return texts, torch.stack([self._cache[t] for t in texts]) if texts else torch.zeros((0, self.width))

    def _remember(self, text: str, vector: torch.Tensor) -> None:
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _embed(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        with torch.inference_mode():
            states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)
