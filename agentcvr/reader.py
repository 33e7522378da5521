"""The option reader: a pretrained sentence encoder fine-tuned to score each option against the master's observations.

Small decoders here do not learn to read in CPU hours (`../shared/notes/offline-models.md`: SmolLM2-135M stayed at
chance after 600-800 examples, letters or yes/no). The reader is built to avoid what made that slow: it never writes a
letter (each option's own tokens are pooled and scored, and options are shuffled in training, so no slot pays), and it
is an encoder (all-MiniLM-L6-v2, 22.7 M parameters, bidirectional: options and observations attend to each other)
that takes a 512-token example forward and back in about a second on one core. Measured so far it has not left chance
either (800-1,600 examples at two learning rates: `docs/reader.md`).

One example is `[CLS] question [SEP] option 1 [SEP] ... option k [SEP] observations [SEP]`; an option's score is a
linear head over the mean of its tokens' final states. The observations are `agentcvr.reading.evidence_text` of the
conversation's looks, cut to fit 512 tokens by giving each look an equal share. Trained by `agentcvr train-reader`
(`train/reader_fit.py`); `Reader.load(folder)` answers at inference.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from agentcvr.episode import Episode
from agentcvr.policies.option_vote import option_texts
from agentcvr.reading import MULTI_SELECT_TASKS, Seen, evidence_text, option_letters, split_looks

MAX_TOKENS = 512  # the encoder's position limit
HEAD_FILE = "head.pt"


@dataclass(frozen=True)
class ReadingItem:
    """One question as the reader takes it; `labels[i]` is 1 where option i is (part of) the answer (empty at
    inference)."""

    id: str
    task: str
    question: str
    options: list[str]
    evidence: str
    labels: list[int]

    @property
    def multi(self) -> bool:
        return self.task in MULTI_SELECT_TASKS


class OptionReader(nn.Module):
    """Encoder + a linear head over each option's mean token state."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 1)

    def forward(self, input_ids, attention_mask, token_type_ids, spans: list[list[tuple[int, int]]]):
        states = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        scores = []
        for row, row_spans in enumerate(spans):
            pooled = torch.stack([states[row, a:b].mean(0) for a, b in row_spans])
            scores.append(self.head(pooled).squeeze(-1))
        return scores  # one tensor of option scores per example


class Encoding:
    """Tokenizes items into the reader's layout, shuffling option order when given an rng."""

    def __init__(self, tokenizer, max_tokens: int = MAX_TOKENS):
        self.tokenizer, self.max_tokens = tokenizer, max_tokens

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def evidence(self, text: str, budget: int) -> list[int]:
        """Each look (a header line and its observation) gets an equal share of `budget`; what a short look leaves
        goes to the others."""
        pieces = [self.ids(look) for look in split_looks(text)]
        kept = [0] * len(pieces)
        left, open_ = budget, list(range(len(pieces)))
        while open_ and left > 0:
            share = max(1, left // len(open_))
            still = []
            for i in open_:
                take = min(share, len(pieces[i]) - kept[i], left)
                kept[i] += take
                left -= take
                if kept[i] < len(pieces[i]):
                    still.append(i)
            open_ = still
        return [token for piece, n in zip(pieces, kept, strict=True) for token in piece[:n]]

    def encode(self, item: ReadingItem, order: list[int]) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        ids, spans = [cls, *self.ids(item.question), sep], []
        for index in order:
            option = self.ids(item.options[index])[:48]
            spans.append((len(ids), len(ids) + max(1, len(option))))
            ids += option + [sep]
        head = len(ids)
        ids += self.evidence(item.evidence, self.max_tokens - head - 1) + [sep]
        types = [0] * head + [1] * (len(ids) - head)
        return ids, types, spans

    def batch(self, items: Sequence[ReadingItem], rng: random.Random | None):
        """Padded tensors, the option spans, and each example's option order."""
        rows, orders = [], []
        for item in items:
            order = list(range(len(item.options)))
            if rng is not None:
                rng.shuffle(order)
            rows.append(self.encode(item, order))
            orders.append(order)
        width = max(len(ids) for ids, _, _ in rows)
        input_ids = torch.zeros((len(rows), width), dtype=torch.long)
        types = torch.zeros_like(input_ids)
        mask = torch.zeros_like(input_ids)
        for r, (ids, tt, _) in enumerate(rows):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            types[r, : len(ids)] = torch.tensor(tt)
            mask[r, : len(ids)] = 1
        return input_ids, mask, types, [spans for _, _, spans in rows], orders


def choose(scores: Sequence[float], multi: bool) -> list[int]:
    """Chosen option indices: the best one, or for multi-select every option scored above 0 (at least one)."""
    best = max(range(len(scores)), key=lambda i: scores[i])
    if not multi:
        return [best]
    return [i for i, s in enumerate(scores) if s > 0] or [best]


class Reader:
    """A fitted reader at inference: `Reader.load(folder).answer(episode, seen)` -> the answer letters."""

    def __init__(self, model: OptionReader, encoding: Encoding):
        self.model, self.encoding = model.eval(), encoding

    @classmethod
    def load(cls, folder: Path, threads: int | None = None) -> Reader:
        from transformers import AutoModel, AutoTokenizer

        if not (Path(folder) / HEAD_FILE).is_file():
            raise FileNotFoundError(f"not a reader folder (no {HEAD_FILE}): {folder}")
        if threads:
            torch.set_num_threads(threads)
        model = OptionReader(AutoModel.from_pretrained(folder))
        model.head.load_state_dict(torch.load(Path(folder) / HEAD_FILE, weights_only=True))
        return cls(model, Encoding(AutoTokenizer.from_pretrained(folder)))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.model.encoder.save_pretrained(folder)
        self.encoding.tokenizer.save_pretrained(folder)
        torch.save(self.model.head.state_dict(), folder / HEAD_FILE)

    def scores(self, episode: Episode, seen: Sequence[Seen]) -> list[float]:
        item = ReadingItem(
            episode.id, episode.task, episode.question, option_texts(episode.options), evidence_text(seen), []
        )
        with torch.inference_mode():
            ids, mask, types, spans, _ = self.encoding.batch([item], None)
            return self.model(ids, mask, types, spans)[0].tolist()

    def answer(self, episode: Episode, seen: Sequence[Seen]) -> str:
        """The chosen options' letters, joined in label order (BU's official form), e.g. 'B' or 'AC'."""
        letters = option_letters(episode.options)
        chosen = choose(self.scores(episode, seen), episode.task in MULTI_SELECT_TASKS)
        return "".join(sorted(letters[i] for i in chosen))
