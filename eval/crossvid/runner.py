"""The asynchronous CrossVid runner: bounded concurrency, retries with backoff, a per-item timeout, one JSONL line
appended (and flushed) per finished item, resume by key, a progress bar with the running official score per task.

    predictions = await run_items(items, predictor, Path("runs/cv.jsonl"), RunConfig(concurrency=64), judge=judge)

A predictor is anything with `async predict(item) -> Reply` (the agent loop in a thread, the single-pass VLM call).
An exception from it is retried (`retries` tries in all, exponential backoff with jitter); after the last try the
item is recorded as failed. `Unretryable` errors (an item that cannot be built, a missing file) fail at once.
With `resume`, items recorded as ok are skipped and failed ones are tried again (the last line for a key wins),
and only under the same run spec (`agentcvr.spec`), which every record carries.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agentcvr.spec import RunSpec
from agentcvr.tasks import TASK_ORDER
from eval.crossvid.judge import Judge
from eval.crossvid.loader import CrossVidItem
from eval.crossvid.records import Prediction, PredictionLog
from eval.crossvid.scores import official_item
from eval.record import resume as resume_rule


class Unretryable(Exception):
    """A failure that another try cannot fix."""


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
    """Run every pending item under `spec` and return all records of `items` (finished before and now), in item
    order."""
    config = config or RunConfig()
    todo, done = pending(items, out, config.resume, spec)
    log = PredictionLog(out)
    running = RunningScore()
    for record in done.values():
        running.add(record)
    semaphore = asyncio.Semaphore(config.concurrency)
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    last_refresh = 0.0

    async def one(item: CrossVidItem) -> None:
        nonlocal last_refresh
        async with semaphore:
            record = await _predict(item, predictor, config, spec)
            if item.task == "CCQA" and record.status == "ok" and judge is not None:
                record.judge = await judge.score(item.raw, record.output)
        log.append(record, sync=config.fsync)
        done[item.key] = record
        running.add(record)
        if on_record:
            on_record(record)
        progress.advance(bar)
        now = time.monotonic()
        if now - last_refresh > 0.25:
            last_refresh = now
            progress.update(bar, description=running.describe())

    try:
        with Progress(*columns, console=console or Console(stderr=True), transient=False) as progress:
            bar = progress.add_task(running.describe(), total=len(todo))
            await asyncio.gather(*(one(item) for item in todo))
            progress.update(bar, description=running.describe())
    finally:
        log.close()
    return [done[item.key] for item in items if item.key in done]


async def _predict(item: CrossVidItem, predictor: Predictor, config: RunConfig, spec: RunSpec) -> Prediction:
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
    error = ""
    for attempt in range(1, config.retries + 1):
        try:
            reply = await asyncio.wait_for(predictor.predict(item), config.timeout)
            return Prediction(
                **base,
                status="ok",
                output=reply.output,
                result=reply.trace,
                attempts=attempt,
                seconds=time.perf_counter() - started,
            )
        except TimeoutError:
            error = f"timed out after {config.timeout:g} s"
        except Unretryable as exc:
            return Prediction(
                **base, status="failed", error=str(exc), attempts=attempt, seconds=time.perf_counter() - started
            )
        except Exception as exc:  # any backend failure is retried, then recorded
            error = f"{type(exc).__name__}: {exc}"
        if attempt < config.retries:
            delay = min(config.backoff_max, config.backoff * 2 ** (attempt - 1))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
    return Prediction(
        **base, status="failed", error=error, attempts=config.retries, seconds=time.perf_counter() - started
    )
