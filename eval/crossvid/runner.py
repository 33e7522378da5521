"""CrossVid items on the engine (`agentcvr.engine`): bounded concurrency, retries with backoff, a per-item timeout,
one record (`eval.record`) appended and flushed per finished item, resume by key under the same spec, a progress bar
with the running official score per task.

    predictions = await run_items(items, predictor, Path("runs/cv.jsonl"), RunConfig(concurrency=64), judge=judge)

A predictor is anything with `async predict(item) -> Reply` (the agent loop in a thread, the single-pass VLM call).
An exception from it is retried (`retries` tries in all, exponential backoff with jitter); after the last try the
item is recorded as failed. `agentcvr.engine.Unretryable` errors (an item that cannot be built) fail at once.
With `resume`, items recorded as ok are skipped and failed ones are tried again (the last line for a key wins),
and only under the same run spec (`agentcvr.spec`), which every record carries.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from agentcvr.engine import Retry, run_many, with_retries
from agentcvr.spec import RunSpec
from agentcvr.tasks import TASK_ORDER
from eval.crossvid.judge import Judge
from eval.crossvid.loader import CrossVidItem
from eval.crossvid.records import Prediction, PredictionLog
from eval.crossvid.scores import official_item
from eval.record import resume as resume_rule


@dataclass
class Reply:
    """What a predictor returns: the raw output (None when the model gave none) and, in agent mode, the trace."""

    output: str | None
    trace: dict | None = None


class Predictor(Protocol):
    async def predict(self, item: CrossVidItem) -> Reply: ...


@dataclass
class RunConfig:
    concurrency: int = 8
    retries: int = 3  # tries in all, as the official scripts' max_tries
    backoff: float = 1.0  # seconds before the 2nd try; doubled each time, jittered
    backoff_max: float = 30.0
    timeout: float = 600.0  # seconds per try of one item
    resume: bool = False
    # Each line is flushed to the OS at once, so a kill -9 loses nothing; fsync also survives a power loss but
    # costs ~3 ms a record on the event loop.
    fsync: bool = False


class RunningScore:
    """Official score per task so far, updated in O(1) per record (for the progress bar)."""

    def __init__(self) -> None:
        self.sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.failed = 0

    def add(self, record: Prediction) -> None:
        scored = official_item(record)
        self.failed += record.status != "ok"
        if scored is not None:
            self.sums[record.task][0] += scored[0]
            self.sums[record.task][1] += scored[1]

    def describe(self) -> str:
        parts = []
        for task in TASK_ORDER:
            total, weight = self.sums.get(task, (0.0, 0.0))
            if weight:
                parts.append(f"{task} {100 * total / weight:.1f}")
        if self.failed:
            parts.append(f"failed {self.failed}")
        return " ".join(parts) or "starting"


def pending(
    items: Sequence[CrossVidItem], out: Path, resume: bool, spec: RunSpec
) -> tuple[list[CrossVidItem], dict[str, Prediction]]:
    """(items still to run, records already finished); without resume an existing non-empty file is an error, and
    with it a file written under another spec (`SpecMismatch`, naming what differs)."""
    if out.exists() and out.stat().st_size and not resume:
        raise FileExistsError(f"{out} already holds predictions: pass --resume to continue it, or choose another --out")
    done = resume_rule(out, spec) if resume else {}
    return [item for item in items if item.key not in done], done


async def run_items(
    items: Sequence[CrossVidItem],
    predictor: Predictor,
    out: Path,
    config: RunConfig | None = None,
    *,
    spec: RunSpec,
    judge: Judge | None = None,
    console: Console | None = None,
    on_record: Callable[[Prediction], None] | None = None,
) -> list[Prediction]:
    """Run every pending item under `spec` on the engine (`agentcvr.engine.run_many`) and return all records of
    `items` (finished before and now), in item order."""
    config = config or RunConfig()
    todo, done = pending(items, out, config.resume, spec)
    log = PredictionLog(out)
    running = RunningScore()
    for record in done.values():
        running.add(record)
    retry = Retry(config.retries, config.backoff, config.backoff_max, config.timeout)

    async def step(item: CrossVidItem) -> Prediction:
        record = await _predict(item, predictor, retry, spec)
        if item.task == "CCQA" and record.status == "ok" and judge is not None:
            record.judge = await judge.score(item.raw, record.output)
        return record

    def finish(item: CrossVidItem, record: Prediction) -> None:
        log.append(record, sync=config.fsync)
        done[item.key] = record
        running.add(record)
        if on_record:
            on_record(record)

    try:
        await run_many(
            todo,
            step,
            concurrency=config.concurrency,
            on_result=finish,
            describe=running.describe,
            console=console,
            refresh=0.25,
        )
    finally:
        log.close()
    return [done[item.key] for item in items if item.key in done]


async def _predict(item: CrossVidItem, predictor: Predictor, retry: Retry, spec: RunSpec) -> Prediction:
    started = time.perf_counter()
    base = {
        "spec": spec,
        "key": item.key,
        "task": item.task,
        "item_id": item.raw["id"],
        "gold": item.raw.get("answer"),
        "points": len(item.raw.get("scoring_points") or []),
    }
    if item.error is not None:
        return Prediction(**base, status="failed", error=item.error, attempts=0)
    reply, error, attempts = await with_retries(lambda: predictor.predict(item), retry)
    seconds = time.perf_counter() - started
    if reply is None:
        return Prediction(**base, status="failed", error=error, attempts=attempts, seconds=seconds)
    return Prediction(**base, status="ok", output=reply.output, result=reply.trace, attempts=attempts, seconds=seconds)
