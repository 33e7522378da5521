"""Does the reader read the evidence, or answer from the question? Held-out accuracy with each item's own
observations against the same items given another item's observations (same task kind).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reader_swap.py --reader scan-v1 --items runs/reader/heldout.jsonl

A reader that answered from the question and options alone would score the same both ways; one that reads falls to
chance on the swapped items. Items are `agentcvr train-reader`'s held-out file (generator seed 10000).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.reader import Reader, ReadingItem, prepare
from train.reader import read_items
from train.reader_fit import accuracy, baselines


def swapped(items: list[ReadingItem]) -> list[ReadingItem]:
    """Each item with the next same-kind item's observations."""
    by_task: dict[str, list[ReadingItem]] = {}
    for item in items:
        by_task.setdefault(item.task, []).append(item)
    return [
        replace(item, evidence=group[(i + 1) % len(group)].evidence)
        for group in by_task.values()
        for i, item in enumerate(group)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reader", default="scan-v1", help="a shipped reader's name or a reader folder")
    parser.add_argument("--items", type=Path, default=Path("runs/reader/heldout.jsonl"))
    args = parser.parse_args()
    if not args.items.is_file():
        parser.error(f"no items at {args.items}: `agentcvr train-reader --out {args.items.parent}` writes them")
    reader = Reader.load(args.reader)
    items = read_items(args.items)
    rows = {
        "chance": baselines(items, items)["chance"],
        "own observations": accuracy(reader.head, items, [prepare(item, reader.encoder) for item in items]),
    }
    others = swapped(items)
    rows["another item's observations"] = accuracy(reader.head, others, [prepare(i, reader.encoder) for i in others])
    kinds = list(rows["own observations"])
    table = Table(title=f"reader {args.reader} on {len(items)} items of {args.items}: exact-match accuracy (%)")
    for name in ["evidence", *kinds]:
        table.add_column(name, justify="left" if name == "evidence" else "right")
    for name, row in rows.items():
        table.add_row(name, *(f"{100 * row[k]:.0f}" for k in kinds))
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
