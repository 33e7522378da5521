"""The engine (`agentcvr.engine`) for a local, blocking `run_one` whose results stay in memory, in the shape of
simple-evals' `map_with_progress`: the caller says how to run one item; the engine owns the worker threads and the
progress bar with a running summary; results come back in item order. Runs that write records and resume go through
`eval.runner.run_items` instead (the one resume rule).

    results = map_with_progress(run_one, episodes, on_result=show, describe=lambda rs: f"{len(rs)} done")

The generator's answerability check (scripts_gen/checks.py) goes through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.console import Console

from agentcvr.engine import in_threads, run_many

T = TypeVar("T")
R = TypeVar("R")

_UNSET = object()


def map_with_progress(
    run_one: Callable[[T], R],
    items: Sequence[T],
    *,
    threads: int = 1,
    on_result: Callable[[T, R], None] | None = None,
    describe: Callable[[list[R]], str] | None = None,
    label: str = "episodes",
    console: Console | None = None,
    progress: bool = True,
) -> list[R]:
    """`run_one(item)` for every item, on `threads` worker threads (1: here, in order).

    Each result goes to `on_result(item, result)` as soon as it is finished, always in the calling thread. The bar
    shows `label`, the count, and `describe` of the results so far. Returns the results of all `items` in item order.
    An error in `run_one` stops the run: items not started are dropped, running ones end (and reach `on_result`),
    then the error is raised."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    results: list = [_UNSET] * len(items)

    def finish(i: int, result: R) -> None:
        results[i] = result
        if on_result is not None:
            on_result(items[i], result)

    def summary() -> str:
        so_far = [r for r in results if r is not _UNSET]
        return f"{label} {describe(so_far) if describe and so_far else ''}".rstrip()

    with in_threads(lambda i: run_one(items[i]), threads) as step:
        asyncio.run(
            run_many(
                range(len(items)), step, threads, on_result=finish, describe=summary, console=console, progress=progress
            )
        )
    return results
