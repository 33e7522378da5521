"""How much the reader's base already knows, untrained: MiniLM sentence similarity between question/options and the
scan's observation lines, on the held-out reading items of `agentcvr train-reader`.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reader_similarity.py --items runs/reader/heldout.jsonl

An option that names videos ("Videos 2 and 4", "Video one.") scores the mean, over its videos, of each video's best
line similarity to the question, minus the same mean over the videos it leaves out; any other option scores its best
line similarity to "question + option". BU picks as many options as the answer has (told the count), the others the
best one. Printed per task kind beside the fine-tuned reader's curve (`docs/reader.md`): the similarity the encoder
brings, which a per-look reader could build on.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer

from agentcvr.models import READER_BASE, ensure_model
from agentcvr.reader import ReadingItem
from agentcvr.reading import look_video, split_looks
from train.reader import read_items

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NAMED = re.compile(r"\s*videos?\s*([\w ,]+?)(?:[.:]|only|$)", re.IGNORECASE)
_STAMP = re.compile(r"^\[[^\]]*\]\s*")


def named_videos(option: str) -> set[int] | None:
    """The videos an option names ("Videos 1, 2, and 4" -> {1, 2, 4}), or None for an option that names none."""
    found = _NAMED.match(option)
    if not found:
        return None
    words = re.findall(r"\d+|one|two|three|four|five|six", found.group(1), re.IGNORECASE)
    numbers = {int(w) if w.isdigit() else _NUMBER_WORDS[w.lower()] for w in words}
    return numbers or None


def lines(evidence: str) -> list[tuple[int, str]]:
    """(video, text) of every observation line, timestamps removed."""
    out = []
    for look in split_looks(evidence):
        video = look_video(look)
        body = look.splitlines()[1:] if video is not None else look.splitlines()  # past the header line
        out += [(video or 0, text) for line in body if (text := _STAMP.sub("", line).strip())]
    return out


class Embedder:
    """Mean-pooled, normalized MiniLM sentence embeddings."""

    def __init__(self, folder: Path):
        self.tokenizer, self.model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()

    def __call__(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=96, return_tensors="pt")
        with torch.inference_mode():
            states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"][..., None]
        return torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1)


def option_scores(item: ReadingItem, embed: Embedder) -> list[float]:
    seen = lines(item.evidence)
    if not seen:
        return [0.0] * len(item.options)
    vectors = embed([text for _, text in seen])
    named = [named_videos(option) for option in item.options]
    if all(named):
        question = embed([item.question])[0]
        best = {}
        for row, (video, _) in enumerate(seen):
            best[video] = max(best.get(video, -1.0), float(vectors[row] @ question))
        scores = []
        for videos in named:
            inside = [best.get(v, 0.0) for v in videos]
            outside = [value for v, value in best.items() if v not in videos]
            scores.append(statistics.fmean(inside) - (statistics.fmean(outside) if outside else 0.0))
        return scores
    options = embed([f"{item.question} {option}" for option in item.options])
    return (options @ vectors.T).max(dim=1).values.tolist()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=Path, default=Path("runs/reader/heldout.jsonl"), help="reading items JSONL")
    args = parser.parse_args()
    if not args.items.is_file():
        parser.error(f"no items at {args.items}: `agentcvr train-reader --out runs/reader` writes heldout.jsonl")
    torch.set_num_threads(1)
    embed = Embedder(ensure_model(READER_BASE))
    hits: dict[str, list[bool]] = {}
    started = time.perf_counter()
    for item in read_items(args.items):
        scores = option_scores(item, embed)
        gold = {i for i, label in enumerate(item.labels) if label}
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        chosen = set(ranked[: len(gold)]) if item.multi else {ranked[0]}
        hits.setdefault(item.task, []).append(chosen == gold)
    table = "  ".join(f"{task} {100 * statistics.fmean(v):.0f}" for task, v in hits.items())
    overall = 100 * statistics.fmean(h for v in hits.values() for h in v)
    print(f"zero-shot similarity, % exact: {table}  all {overall:.1f}  ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
