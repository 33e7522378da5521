"""The one engine for every "run many items" job: bounded concurrency, retries with backoff, a per-item timeout,
results handed over one by one as they finish, and a progress bar with a running summary.

Local predictors (a model in this process) run on worker threads (`in_threads`, `in_thread`: a timed-out item's
thread is told to stop through `agentcvr.cancel`), remote ones are awaited directly
(`asyncio`), and either way `run_many` keeps `concurrency` items in flight with a fixed set of workers pulling from
the item list, so a run of 100k items holds `concurrency` tasks, not 100k. What an item becomes (a `Record` appended
to a log, a row in memory) is the caller's step; resume is `eval.record.resume`, applied before the items come here.

    await run_many(items, step, concurrency=64, on_result=log_it, describe=running.describe)
    reply, error, tries = await with_retries(lambda: predictor.predict(item), Retry(tries=3, timeout=600))
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agentcvr import cancel
from agentcvr.cancel import CancelToken

T = TypeVar("T")
R = TypeVar("R")


class Unretryable(Exception):
    """A failure that another try cannot fix (an item that cannot be built, a missing file)."""


@dataclass(frozen=True)
class Retry:
    """How one item is tried: remote predictors fail transiently, so they get several tries with jittered exponential
    backoff; `timeout` bounds each try (None: unbounded, for local models whose threads cannot be interrupted)."""

    tries: int = 3
    backoff: float = 1.0  # seconds before the 2nd try; doubled each time, jittered
    backoff_max: float = 30.0
    timeout: float | None = 600.0


async def with_retries(call: Callable[[], Awaitable[R]], retry: Retry) -> tuple[R | None, str | None, int]:
    """(reply, None, tries used) on success, (None, why, tries used) after the last try or an `Unretryable`."""
    error = ""
    for attempt in range(1, retry.tries + 1):
        try:
            return await asyncio.wait_for(call(), retry.timeout), None, attempt
        except TimeoutError:
            error = f"timed out after {retry.timeout:g} s"
        except Unretryable as exc:
            return None, str(exc), attempt
        except Exception as exc:  # any backend failure is retried, then reported
            error = f"{type(exc).__name__}: {exc}"
        if attempt < retry.tries:
            delay = min(retry.backoff_max, retry.backoff * 2 ** (attempt - 1))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
    return None, error, retry.tries


async def in_thread(pool: Executor, work: Callable[[], R]) -> R:
    """`work()` on a pool thread, awaited; if the await is cancelled (a try's timeout, the run stopping) the work is
    told to stop too (`agentcvr.cancel`: the loop, llama.cpp and perception check the token), so a timed-out item
    frees its thread instead of running on unseen."""
    token = CancelToken()

    def scoped() -> R:
        with cancel.scope(token):
            return work()

    future = asyncio.get_running_loop().run_in_executor(pool, scoped)
    try:
        return await future
    except asyncio.CancelledError:
        token.cancel("timeout")
        raise


@contextmanager
def in_threads(run_one: Callable[[T], R], threads: int) -> Iterator[Callable[[T], Awaitable[R]]]:
    """`run_one` as an awaitable step on `threads` worker threads (a local model blocks; the loop must not)."""
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="item") as pool:

        async def step(item: T) -> R:
            return await in_thread(pool, lambda: run_one(item))

        yield step


async def run_many(
    items: Sequence[T],
    step: Callable[[T], Awaitable[R]],
    concurrency: int = 1,
    *,
    on_result: Callable[[T, R], None] | None = None,
    describe: Callable[[], str] | None = None,
    console: Console | None = None,
    progress: bool = True,
    refresh: float = 0.0,
) -> None:
    """`step(item)` for every item, at most `concurrency` at a time; each result goes to `on_result(item, result)` as
    it finishes, on the event loop (append it to a log there and a crash loses nothing finished).

    The bar reads `describe()` (a title and the running score), redrawn at most every `refresh` seconds. An error in
    `step` or `on_result` stops the run: no new item starts, the running ones end (and reach `on_result`), then the
    first error is raised. A step that must not stop the run catches its own errors (`with_retries`)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    pending = iter(items)
    label = describe or str  # str() is ""
    errors: list[BaseException] = []
    last_refresh = 0.0
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]

    with Progress(*columns, console=console or Console(stderr=True), transient=False, disable=not progress) as bar:
        task = bar.add_task(label(), total=len(items))

        async def worker() -> None:
            nonlocal last_refresh
            for item in pending:  # one shared iterator: each item goes to exactly one worker
                if errors:
                    return
                try:
                    result = await step(item)
                    if on_result is not None:
                        on_result(item, result)
                except Exception as error:
                    errors.append(error)
                    return
                bar.advance(task)
                now = time.monotonic()
                if now - last_refresh >= refresh:
                    last_refresh = now
                    bar.update(task, description=label())

        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))
        bar.update(task, description=label())
    if errors:
        raise errors[0]
