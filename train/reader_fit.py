"""Fit the option reader on generated reading items, with a held-out curve and checkpoints to resume from.

    fit_reader(ReaderRun(out=Path("runs/reader"), encoder=Path(...)), train_items, heldout_items)

Every `eval_every` examples it scores the held-out items (another generator seed) per task kind, appends the point to
`curve.jsonl` and saves `checkpoint.pt` (weights, optimizer, examples seen, the rng), so a killed run goes on from its
last point; at the end the best checkpoint by held-out accuracy is kept as `reader/` (encoder + head).
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentcvr.reader import Encoding, OptionReader, Reader, ReadingItem, choose
from train.reader import loss_of


@dataclass
class ReaderRun:
    """Settings of one reader fit."""

    out: Path
    encoder: Path  # a folder with a BERT-style encoder and its tokenizer
    examples: int = 6000  # training examples to see in all
    batch_size: int = 8
    encoder_lr: float = 5e-5
    head_lr: float = 1e-3
    eval_every: int = 800
    seed: int = 0


def accuracy(model: OptionReader, encoding: Encoding, items: Sequence[ReadingItem]) -> dict[str, float]:
    """Share of items whose chosen options are exactly the gold ones, per task kind and overall ('all')."""
    hits: dict[str, list[bool]] = defaultdict(list)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(items), 16):
            batch = items[start : start + 16]
            ids, mask, types, spans, orders = encoding.batch(batch, None)
            for item, scores in zip(batch, model(ids, mask, types, spans), strict=True):
                chosen = set(choose(scores.tolist(), item.multi))
                hits[item.task].append(chosen == {i for i, y in enumerate(item.labels) if y})
    model.train()
    table = {task: sum(v) / len(v) for task, v in sorted(hits.items())}
    table["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return table


def train_step(
    model: OptionReader, encoding: Encoding, optimizer, batch: Sequence[ReadingItem], rng: random.Random
) -> float:
    """One optimizer step on `batch` (options shuffled by `rng`); returns the batch's mean loss."""
    ids, mask, types, spans, orders = encoding.batch(batch, rng)
    scores = model(ids, mask, types, spans)
    loss = torch.stack([loss_of(s, item, o) for s, item, o in zip(scores, batch, orders, strict=True)]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def fit_reader(run: ReaderRun, train: Sequence[ReadingItem], heldout: Sequence[ReadingItem]) -> dict[str, float]:
    from transformers import AutoModel, AutoTokenizer

    run.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(run.seed)  # the head's initialization
    tokenizer = AutoTokenizer.from_pretrained(run.encoder)
    model = OptionReader(AutoModel.from_pretrained(run.encoder))
    encoding = Encoding(tokenizer)
    optimizer = torch.optim.AdamW(
        [
            {"params": model.encoder.parameters(), "lr": run.encoder_lr},
            {"params": model.head.parameters(), "lr": run.head_lr},
        ],
        weight_decay=0.01,
    )
    checkpoint, curve_path = run.out / "checkpoint.pt", run.out / "curve.jsonl"
    seen, rng, best = 0, random.Random(run.seed), -1.0
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        seen, best = state["seen"], state["best"]
        rng.setstate(state["rng"])
    else:
        point = {"examples": 0, "seconds": 0.0, "loss": None, **accuracy(model, encoding, heldout)}
        curve_path.write_text(json.dumps(point) + "\n")
        print(json.dumps(point), flush=True)
    losses: list[float] = []
    clock = time.perf_counter()
    elapsed0 = _last_seconds(curve_path)
    columns = [
        TextColumn("reader"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    ]
    with Progress(*columns) as progress:
        bar = progress.add_task("fit", total=run.examples, completed=seen, note="")
        while seen < run.examples:
            batch = [
                train[_shuffled(len(train), run.seed, (seen + k) // len(train))[(seen + k) % len(train)]]
                for k in range(run.batch_size)
            ]
            losses.append(train_step(model, encoding, optimizer, batch, rng))
            seen += run.batch_size
            progress.update(bar, completed=seen, note=f"loss {sum(losses[-25:]) / len(losses[-25:]):.3f}")
            if seen % run.eval_every < run.batch_size or seen >= run.examples:
                table = accuracy(model, encoding, heldout)
                seconds = elapsed0 + time.perf_counter() - clock
                point = {"examples": seen, "seconds": round(seconds, 1), "loss": sum(losses) / len(losses), **table}
                with curve_path.open("a") as f:
                    f.write(json.dumps(point) + "\n")
                progress.console.print(json.dumps(point))
                losses = []
                if table["all"] > best:
                    best = table["all"]
                    Reader(model, encoding).save(run.out / "reader")
                    model.train()
                state = {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "seen": seen,
                    "best": best,
                    "rng": rng.getstate(),
                }
                torch.save(state, checkpoint.with_suffix(".tmp"))
                checkpoint.with_suffix(".tmp").replace(checkpoint)
    return {"best": best}


@functools.lru_cache(maxsize=2)
def _shuffled(count: int, seed: int, epoch: int) -> list[int]:
    """The order of one pass over the items: fixed by seed and pass, so a resumed run continues the same order (the
    pools are written one task kind after another: unshuffled, the first 800 examples were all BU)."""
    order = list(range(count))
    random.Random(f"{seed}-{epoch}").shuffle(order)
    return order


def _last_seconds(curve: Path) -> float:
    if not curve.exists():
        return 0.0
    lines = curve.read_text().splitlines()
    return float(json.loads(lines[-1])["seconds"]) if lines else 0.0


def plot_curve(curve: Path, png: Path) -> Path:
    """Held-out accuracy per task kind (and overall) against training examples seen."""
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
    ax.set_xlabel("training examples seen")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("option reader (MiniLM-L6) on the scan's observations")
    ax.grid(alpha=0.3)
    ax.legend(ncol=4, fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
