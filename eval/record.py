"""The one record type of every "run many items" job, its append-only log, and the one resume rule.

`agentcvr run` (episodes of generated scripts) and `agentcvr eval crossvid` (CrossVid items) write the same `Record`:
one JSONL line per finished item, appended and flushed as it finishes, carrying the run spec (`agentcvr.spec`) so a
file never mixes two runs. `agentcvr report` reads any of them. A record holds what scoring needs without the source
files (the gold answer, the CCQA judge's raw reply), so saved runs are re-scored without running anything.

`status` is "ok" when the predictor replied (its `output` may still be None: the official scripts keep such items and
score them 0) and "failed" when no reply came (errors after retries, timeouts, an item that cannot be built).

    done = resume(Path("runs/a.jsonl"), spec)      # SpecMismatch if written under another spec
    log = RecordLog(Path("runs/a.jsonl")); log.append(record); log.close()
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from agentcvr.spec import RunSpec, SpecMismatch, check_resume
from agentcvr.trace import EpisodeResult
from eval.jsonl import Skipped, end_torn_line, read_records


class JudgeRecord(BaseModel):
    """The CCQA judge's call: its raw reply, or the error that stopped it (the official scorer never retries)."""

    model: str = ""
    reply: str | None = None
    error: str | None = None


class Record(BaseModel):
    """One finished item: what was asked, what came back, how it scored, and the spec of the run."""

    key: str = Field(description="Unique in a run: the episode id (`run`), TASK/id (`eval crossvid`).")
    task: str
    status: Literal["ok", "failed"] = "ok"
    item_id: Any = None
    output: str | None = Field(default=None, description="The raw reply or answer, never normalized.")
    gold: Any = Field(default=None, description="The item's answer as annotated (list for BU, [s, e] for FSA).")
    points: int = Field(default=0, description="CCQA: number of scoring points.")
    judge: JudgeRecord | None = None
    error: str | None = None
    attempts: int = 0
    seconds: float = 0.0
    result: EpisodeResult | None = Field(default=None, description="The agent's whole episode trace, when one ran.")
    reference: EpisodeResult | None = Field(
        default=None, description="`eval fidelity`: the same episode through the spec's reference (the simulator)."
    )
    official: float | None = Field(default=None, description="`run`: the registry's official score, computed once.")
    strict: float | None = Field(default=None, description="`run`: the registry's strict score.")
    question: str | None = Field(default=None, description="`question_digest` of the episode that was run.")
    spec: RunSpec | None = Field(default=None, description="The run's settings (None: written before they were).")

    @model_validator(mode="before")
    @classmethod
    def _earlier_forms(cls, data: Any) -> Any:
        """Read lines written before there was one record: `run`'s {result, official, strict} and `eval crossvid`'s
        agent `trace`."""
        if not isinstance(data, dict):
            return data
        if "trace" in data:
            data = {**data, "result": data.get("result") or data["trace"]}
            del data["trace"]
        result = data.get("result")
        if "key" not in data and isinstance(result, dict):
            data = {**data, "key": result.get("episode_id"), "task": result.get("task"), "output": result.get("answer")}
        return data

    @property
    def trace(self) -> dict | None:
        """The episode trace as JSON (CrossVid agent mode's view)."""
        return None if self.result is None else self.result.model_dump(mode="json")


def read_latest(path: Path) -> tuple[dict[str, Record], Skipped]:
    """Records by key, the last line for a key winning (a retried failure replaces the failure), and the lines that
    are not records (a torn last line after a kill: resume runs that item again)."""
    records, skipped = read_records(path, Record)
    return {record.key: record for record in records}, skipped


def resume(out: Path, spec: RunSpec, questions: Mapping[str, str] | None = None) -> dict[str, Record]:
    """The one resume rule: the records of `out` that need no new run (status ok; failed ones run again), only if
    every record there was written under `spec` and, where `questions` gives an item's question digest, asked the
    same question under the same key; else `SpecMismatch` naming what differs. Lines that are JSON but not records
    are refused too (a torn last line is not: that item runs again)."""
    written, skipped = read_latest(out)
    if skipped.numbers.get("unexpected"):  # JSON lines of another kind: an earlier format, another tool's file
        raise SpecMismatch(f"{out} holds lines that are not records ({skipped.describe()}). Use another --out.")
    check_resume(out, spec, (record.spec for record in written.values()))
    changed = [key for key, asked in (questions or {}).items() if key in written and written[key].question != asked]
    if changed:
        raise SpecMismatch(
            f"{out} holds {len(changed)} episode(s) that asked another question under the same id (e.g. "
            f"{', '.join(changed[:3])}): the scripts changed. Use another --out."
        )
    return {key: record for key, record in written.items() if record.status == "ok"}


class RecordLog:
    """Appends records to a JSONL file, one `write` + flush per record (fsync when asked: it costs ~3 ms a record on
    the event loop), so a `kill -9` loses at most the line being written."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        end_torn_line(path)
        self._handle = path.open("a")

    def append(self, record: Record, sync: bool = False) -> None:
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()
        if sync:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
