"""Append-only JSONL files that survive a crash mid-write."""

from __future__ import annotations

from pathlib import Path


def end_torn_line(path: Path) -> None:
    """After a crash mid-write the file may end without a newline; start the next record on a line of its own."""
    if path.exists() and path.stat().st_size:
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            torn = handle.read(1) != b"\n"
        if torn:
            with path.open("a") as handle:
                handle.write("\n")
