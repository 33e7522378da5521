"""Items on the engine: the one path of every "run many items" command (`agentcvr run`, `eval crossvid`,
`eval synth`). Each item is asked of a predictor on `agentcvr.engine` (bounded concurrency, retries with backoff, a
per-try timeout), becomes one `Record` appended and flushed as it finishes, and the bar shows the running official
score per task (`eval.summary.RunningScore`).

    records = await run_items(items, predictor, Path("runs/a.jsonl"), RunConfig(concurrency=8), spec=spec)

A predictor is anything with `async predict(item) -> Reply` (the agent loop in a thread: `eval.agent_mode`; the
single-pass VLM call). An exception from it is retried (`retries` tries in all, exponential backoff with jitter);
after the last try the item is recorded as failed. `agentcvr.engine.Unretryable` errors fail at once, and an item
that cannot be built (its `error` set) is recorded as failed without a try. A failed record of a predictor that
writes traces (`traces = True`) keeps one, so the trace view shows what happened: the last try's partial trace (a
`FailedTry` carries it), else an empty one whose `failure` is the error (a timeout, an item that cannot be built).
`grade` turns a record into its scored form before it is written (the agent run's registry scores, CrossVid's CCQA
judge).

Resume is the same everywhere: an output file that already holds records is refused unless `resume` is set (the
`--resume` flag), and then only under the same run spec and the same questions (`eval.record.resume`, naming what
differs); items recorded as ok are skipped, failed ones run again, the last line for a key wins.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from agentcvr.engine import Retry, run_many, with_retries
from agentcvr.spec import RunSpec
from agentcvr.trace import EpisodeResult
from eval.record import Record, RecordLog
from eval.record import resume as resume_rule
from eval.summary import RunningScore


class FailedTry(RuntimeError):
    """A try that failed part-way: the error, and the trace it got as far as (a failed record keeps the last one)."""

    def __init__(self, message: str, result: EpisodeResult | None = None):
        super().__init__(message)
        self.result = result


@dataclass
class Reply:
    """What a predictor returns: the raw output (None when the model gave none) and, from the agent, its trace (and
    the reference run's, when it compares two perceptions)."""

    output: str | None
    result: EpisodeResult | None = None
    reference: EpisodeResult | None = None


class Item(Protocol):
    """One thing to run: a unique key, its task kind, why it cannot run (or None), and the record fields known
    before running (`item_id`, `gold`, `points`, `question`)."""

    @property
    def key(self) -> str: ...

    @property
    def task(self) -> str: ...

    @property
    def error(self) -> str | None: ...

    def fields(self) -> dict[str, Any]: ...


class Predictor(Protocol):
    """Answers items; one whose replies carry the agent's trace also sets `traces = True` (read with getattr, False
    when absent), and its failed items then keep a trace too."""

    async def predict(self, item: Any) -> Reply: ...


Grade = Callable[[Any, Record], Awaitable[Record]]


@dataclass
class RunConfig:
    concurrency: int = 8
    retries: int = 3  # tries in all, as the official scripts' max_tries
    backoff: float = 1.0  # seconds before the 2nd try; doubled each time, jittered
    backoff_max: float = 30.0
    timeout: float | None = 600.0  # seconds per try of one item
    resume: bool = False
    # Each line is flushed to the OS at once, so a kill -9 loses nothing; fsync also survives a power loss but
    # costs ~3 ms a record on the event loop.
    fsync: bool = False


def pending(
    items: Sequence[Item], out: Path | None, resume: bool, spec: RunSpec
) -> tuple[list[Item], dict[str, Record]]:
    """(items still to run, records of `items` already finished). A file that holds records is refused without
    `resume` (`FileExistsError`), and always when written under another spec or with other questions under the same
    keys (`SpecMismatch`, naming what differs)."""
    if out is None:
        if resume:
            raise ValueError("--resume continues an output file: give it with --out")
        return list(items), {}
    questions = {item.key: asked for item in items if (asked := item.fields().get("question"))}
    written = out.exists() and out.stat().st_size > 0
    done = resume_rule(out, spec, questions) if written else {}  # another spec is named even without --resume
    if written and not resume:
        raise FileExistsError(f"{out} already holds records: pass --resume to continue it, or choose another --out")
    keys = {item.key for item in items}
    done = {key: record for key, record in done.items() if key in keys}
    return [item for item in items if item.key not in done], done


async def run_items(
    items: Sequence[Item],
    predictor: Predictor,
    out: Path | None,
    config: RunConfig | None = None,
    *,
    spec: RunSpec,
    grade: Grade | None = None,
    console: Console | None = None,
    on_record: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Run every pending item under `spec` on the engine and return the records of all `items` (finished before and
    now) in item order. Refusals (`pending`) come before anything runs."""
    config = config or RunConfig()
    todo, done = pending(items, out, config.resume, spec)
    log = RecordLog(out) if out is not None else None
    running = RunningScore(f"({len(done)} done before)" if done else "")
    for record in done.values():
        running.add(record)
    retry = Retry(config.retries, config.backoff, config.backoff_max, config.timeout)

    async def step(item: Item) -> Record:
        record = await predict_record(item, predictor, retry, spec)
        return await grade(item, record) if grade is not None else record

    def finish(item: Item, record: Record) -> None:
        if log is not None:
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
        if log is not None:
            log.close()
    return [done[item.key] for item in items if item.key in done]


async def predict_record(item: Item, predictor: Predictor, retry: Retry, spec: RunSpec) -> Record:
    """The record of one item: its reply after at most `retry.tries` tries, or why none came (with the last try's
    partial trace, or an empty one, when the predictor writes traces)."""
    started = time.perf_counter()
    base = {"spec": spec, "key": item.key, "task": item.task, **item.fields()}
    traces = getattr(predictor, "traces", False)
    if item.error is not None:
        return Record(
            **base, status="failed", error=item.error, attempts=0, result=_failed_trace(item, item.error, traces)
        )
    partial: EpisodeResult | None = None

    async def attempt() -> Reply:
        nonlocal partial
        partial = None  # the last try's trace, not an earlier one's
        try:
            return await predictor.predict(item)
        except FailedTry as failed:
            partial = failed.result
            raise

    reply, error, attempts = await with_retries(attempt, retry)
    seconds = time.perf_counter() - started
    if reply is None:
        result = partial if partial is not None else _failed_trace(item, error or "failed", traces)
        return Record(**base, status="failed", error=error, attempts=attempts, seconds=seconds, result=result)
    return Record(
        **base, output=reply.output, result=reply.result, reference=reply.reference, attempts=attempts, seconds=seconds
    )


def _failed_trace(item: Item, error: str, traces: bool) -> EpisodeResult | None:
    """An explicit empty trace for an item that failed before any step was recorded."""
    return EpisodeResult(episode_id=item.key, task=item.task, failure=error) if traces else None
