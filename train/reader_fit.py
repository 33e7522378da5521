"""Fit the option reader's head on generated reading items, with a held-out curve and checkpoints to resume from.

    fit_reader(ReaderRun(out=Path("runs/reader")), train_items, heldout_items)

Every sentence of every item is embedded once by the frozen encoder (a progress bar; the scripts repeat their
sentences, so this is minutes, not hours); then the head trains one item per Adam step. Every `eval_every` examples
it scores the held-out items (another generator seed) per task kind, appends the point to `curve.jsonl` and saves
`checkpoint.pt` (head, optimizer, examples seen, the rng), so a killed run goes on from its last point; the best head
by held-out accuracy is kept as `reader/`. `baselines.json` holds what the curve is read against: chance, and always
answering the training items' most frequent letter.
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentcvr.models import READER_BASE, ensure_model
from agentcvr.reader import READ_TASKS, Prepared, Reader, ReaderHead, ReadingItem, choose, prepare
from agentcvr.sentences import SentenceEncoder
from train.reader import loss_of


@dataclass
class ReaderRun:
    """Settings of one reader fit."""

    out: Path
    encoder: str = READER_BASE  # the sentence encoder's name in the model registry
    examples: int = 16_800  # training examples to see in all (items are revisited)
    eval_every: int = 1_400
    lr: float = 1e-3
    width: int = 128
    seed: int = 0
    windows: int = 1  # the looks its items were made from (recorded with the reader)
    lexical: bool = False  # the head reads shared words too (`agentcvr.reader.word_overlap`)


def _columns(name: str) -> list:
    return [TextColumn(name), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[note]}")]


def prepare_all(items: Sequence[ReadingItem], encoder: SentenceEncoder) -> list[Prepared]:
    """Every item as vectors, with a progress bar; the encoder's cache embeds each distinct sentence once."""
    with Progress(*_columns("embedding sentences")) as progress:
        bar = progress.add_task("embed", total=len(items), note="")
        prepared = []
        for item in items:
            prepared.append(prepare(item, encoder))
            progress.advance(bar)
    return prepared


def _gold(item: ReadingItem) -> set[int]:
    return {i for i, y in enumerate(item.labels) if y}


def accuracy(head: ReaderHead, items: Sequence[ReadingItem], prepared: Sequence[Prepared]) -> dict[str, float]:
    """Share of items whose chosen options are exactly the gold ones, per task kind and overall ('all')."""
    hits: dict[str, list[bool]] = defaultdict(list)
    head.eval()
    with torch.inference_mode():
        for item, vectors in zip(items, prepared, strict=True):
            hits[item.task].append(set(choose(head(vectors).tolist(), item.multi)) == _gold(item))
    head.train()
    return _table(hits)


def _table(hits: dict[str, list[bool]]) -> dict[str, float]:
    table = {task: sum(v) / len(v) for task, v in sorted(hits.items())}
    table["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return table


def baselines(train: Sequence[ReadingItem], heldout: Sequence[ReadingItem]) -> dict[str, dict[str, float]]:
    """Held-out accuracy of guessing (chance: one option, or for BU one non-empty subset, uniformly) and of always
    answering the gold set most frequent among the training items of that kind (the majority letter)."""
    chance: dict[str, list[float]] = defaultdict(list)
    common: dict[str, Counter] = defaultdict(Counter)
    for item in train:
        common[item.task][frozenset(_gold(item))] += 1
    majority: dict[str, list[bool]] = defaultdict(list)
    for item in heldout:
        k = len(item.options)
        chance[item.task].append(1 / (2**k - 1) if item.multi else 1 / k)
        guess = common[item.task].most_common(1)[0][0] if common[item.task] else frozenset()
        majority[item.task].append(set(guess) == _gold(item))
    chance_table = {task: sum(v) / len(v) for task, v in sorted(chance.items())}
    chance_table["all"] = sum(sum(v) for v in chance.values()) / sum(len(v) for v in chance.values())
    return {"chance": chance_table, "majority": _table(majority)}


def fit_reader(run: ReaderRun, train: Sequence[ReadingItem], heldout: Sequence[ReadingItem]) -> dict[str, float]:
    run.out.mkdir(parents=True, exist_ok=True)
    encoder = SentenceEncoder(ensure_model(run.encoder), cache_size=10**7)  # the whole pool stays embedded
    sentences = run.out / "sentences.pt"  # embedded once per run folder: a resumed fit starts training at once
    if sentences.exists():
        encoder.add(*torch.load(sentences, weights_only=True))
    train_vectors, heldout_vectors = prepare_all(train, encoder), prepare_all(heldout, encoder)
    torch.save(encoder.cached(), sentences.with_suffix(".tmp"))
    sentences.with_suffix(".tmp").replace(sentences)
    (run.out / "baselines.json").write_text(json.dumps(baselines(train, heldout), indent=2) + "\n")
    torch.manual_seed(run.seed)  # the head's initialization
    head = ReaderHead(READ_TASKS, encoder.width, run.width, run.lexical)
    optimizer = torch.optim.Adam(head.parameters(), lr=run.lr)
    checkpoint, curve_path = run.out / "checkpoint.pt", run.out / "curve.jsonl"
    seen, best = 0, -1.0
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        head.load_state_dict(state["head"])
        optimizer.load_state_dict(state["optimizer"])
        seen, best = state["seen"], state["best"]
    else:
        point = {"examples": 0, "seconds": 0.0, "loss": None, **accuracy(head, heldout, heldout_vectors)}
        curve_path.write_text(json.dumps(point) + "\n")
        print(json.dumps(point), flush=True)
    losses: list[float] = []
    clock, elapsed0 = time.perf_counter(), _last_seconds(curve_path)
    with Progress(*_columns("reader")) as progress:
        bar = progress.add_task("fit", total=run.examples, completed=seen, note="")
        while seen < run.examples:
            index = _shuffled(len(train), run.seed, seen // len(train))[seen % len(train)]
            loss = loss_of(head(train_vectors[index]), train[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            seen += 1
            progress.update(bar, completed=seen, note=f"loss {sum(losses[-200:]) / len(losses[-200:]):.3f}")
            if seen % run.eval_every == 0 or seen >= run.examples:
                table = accuracy(head, heldout, heldout_vectors)
                seconds = elapsed0 + time.perf_counter() - clock
                point = {"examples": seen, "seconds": round(seconds, 1), "loss": sum(losses) / len(losses), **table}
                with curve_path.open("a") as f:
                    f.write(json.dumps(point) + "\n")
                progress.console.print(json.dumps({k: _rounded(v) for k, v in point.items()}))
                losses = []
                if table["all"] > best:
                    best = table["all"]
                    Reader(encoder, head, run.encoder, run.windows).save(run.out / "reader")
                    head.train()
                state = {"head": head.state_dict(), "optimizer": optimizer.state_dict(), "seen": seen, "best": best}
                torch.save(state, checkpoint.with_suffix(".tmp"))
                checkpoint.with_suffix(".tmp").replace(checkpoint)
    return {"best": best}


@functools.lru_cache(maxsize=2)
def _shuffled(count: int, seed: int, epoch: int) -> list[int]:
    """The order of one pass over the items: fixed by seed and pass, so a resumed run continues the same order (the
    pools are written one task kind after another)."""
    order = list(range(count))
    random.Random(f"{seed}-{epoch}").shuffle(order)
    return order


def _rounded(value: object) -> object:
    return round(value, 3) if isinstance(value, float) else value


def _last_seconds(curve: Path) -> float:
    if not curve.exists():
        return 0.0
    lines = curve.read_text().splitlines()
    return float(json.loads(lines[-1])["seconds"]) if lines else 0.0


def plot_curve(curve: Path, png: Path) -> Path:
    """Held-out accuracy per task kind (and overall) against training examples seen, beside chance and the majority
    letter overall (dashed) when `baselines.json` is beside the curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [json.loads(line) for line in curve.read_text().splitlines()]
    kinds = [k for k in points[0] if k not in ("examples", "seconds", "loss")]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [p["examples"] for p in points]
    for kind in kinds:
        ax.plot(
            xs,
            [100 * p[kind] for p in points],
            marker="o",
            lw=2.5 if kind == "all" else 1,
            label=kind,
            color="black" if kind == "all" else None,
        )
    marks = curve.parent / "baselines.json"
    if marks.exists():
        for name, style in (("chance", ":"), ("majority", "--")):
            value = 100 * json.loads(marks.read_text())[name]["all"]
            ax.axhline(value, color="grey", ls=style, lw=1.2, label=f"{name} (all) {value:.0f} %")
    ax.set_xlabel("training examples seen")
    ax.set_ylabel("held-out exact-match accuracy (%)")
    ax.set_title("option reader (frozen MiniLM-L6 + trained head) on the scan's observations")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(ncol=4, fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
