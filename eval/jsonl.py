"""Append-only JSONL record files: a crash mid-write leaves at most one torn line, and reading says what it skipped.

records, skipped = read_records(Path("runs/a.jsonl"), Record)
if skipped:
    print(skipped.describe())  # skipped 2 of 40 lines: 1 unreadable (line 40: ...), 1 unexpected (line 7: ...)
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)


def end_torn_line(path: Path) -> None:
    """After a crash mid-write the file may end without a newline; start the next record on a line of its own."""
    if path.exists() and path.stat().st_size:
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            torn = handle.read(1) != b"\n"
        if torn:
            with path.open("a") as handle:
                handle.write("\n")


@dataclass
class Skipped:
    """Lines of a record file that are not records: `unreadable` (not JSON: a torn line, a stray edit) or
    `unexpected` (JSON, but not a record of this kind), with their line numbers and the first reason of each."""

    lines: int = 0
    numbers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    reasons: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, number: int, why: str) -> None:
        self.numbers[reason].append(number)
        self.reasons.setdefault(reason, why)

    def __len__(self) -> int:
        return sum(len(numbers) for numbers in self.numbers.values())

    def describe(self) -> str:
        parts = []
        for reason, numbers in self.numbers.items():
            shown = ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")
            parts.append(f"{len(numbers)} {reason} (line {shown}: {self.reasons[reason]})")
        return f"skipped {len(self)} of {self.lines} lines: " + "; ".join(parts)


def read_records(path: Path, model: type[T]) -> tuple[list[T], Skipped]:
    """Every line of `path` that is a `model` record, in file order, and what was skipped (blank lines are not)."""
    records: list[T] = []
    skipped = Skipped()
    if not path.exists():
        return records, skipped
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            skipped.lines += 1
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                skipped.add("unreadable", number, f"not JSON, {error.msg.lower()}")
                continue
            try:
                records.append(model.model_validate(data))
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(map(str, first["loc"]))
                skipped.add("unexpected", number, f"{where}: {first['msg']}" if where else first["msg"])
    return records, skipped
