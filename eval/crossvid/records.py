"""Prediction records: one JSONL line per finished item, appended as it finishes, read back for resume and reports.

A record carries what scoring needs without the annotation files (the gold answer, the CCQA judge's raw reply), so
`agentcvr eval report` re-scores saved runs without running anything. `status` is "ok" when the model replied
(its `output` may still be None: the official scripts keep such items and score them 0) and "failed" when no reply
came (errors after retries, timeouts, an item that cannot be built): the official scripts drop those.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcvr.spec import RunSpec
from eval.jsonl import end_torn_line, read_records


class JudgeRecord(BaseModel):
    """The CCQA judge's call: its raw reply, or the error that stopped it (the official scorer never retries)."""

    model: str = ""
    reply: str | None = None
    error: str | None = None


class Prediction(BaseModel):
    """One item's prediction with what scoring needs."""

    key: str = Field(description="TASK/id, unique in a run.")
    task: str
    item_id: Any
    status: Literal["ok", "failed"]
    output: str | None = Field(default=None, description="The raw reply, never normalized.")
    gold: Any = Field(default=None, description="The item's answer as annotated (list for BU, [s, e] for FSA).")
    points: int = Field(default=0, description="CCQA: number of scoring points.")
    judge: JudgeRecord | None = None
    error: str | None = None
    attempts: int = 0
    seconds: float = 0.0
    trace: dict | None = Field(default=None, description="Agent mode: the full episode trace.")
    spec: RunSpec | None = Field(default=None, description="The run's settings (None: written before they were).")


def read_predictions(path: Path) -> dict[str, Prediction]:
    """Records by key, the last line for a key winning (a retried failure replaces the failure); lines that are not
    records (a torn last line: the process killed mid-write) are skipped (`read_records` says which)."""
    records, _ = read_records(path, Prediction)
    return {record.key: record for record in records}


class PredictionLog:
    """Appends records to a JSONL file, one `write` + flush per record (fsync when asked: it costs ~3 ms a record on
    the event loop), so a `kill -9` loses at most the line being written (`read_predictions` skips it and `--resume`
    re-runs the item)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        end_torn_line(path)
        self._handle = path.open("a")

    def append(self, record: Prediction, sync: bool = False) -> None:
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()
        if sync:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
