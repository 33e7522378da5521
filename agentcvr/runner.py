"""The engine (`agentcvr.engine`) for a local, blocking `run_one`, in the shape of simple-evals' `map_with_progress`:
the caller says how to run one item; the engine owns the worker threads and the progress bar with a running summary;
this adds resume (items finished before are skipped and returned as they were) and results in item order.

    results = map_with_progress(run_one, episodes, key=lambda e: e.id, done=read_back, on_result=append_line,
                                describe=lambda rs: f"success {mean(r.official for r in rs):.0%}")

`agentcvr run` (eval/runner.py), the fidelity run (eval/fidelity.py), the held-out evaluation (train/evaluate.py)
and the generator's answerability check (scripts_gen/checks.py) all go through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping, Sequence
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
    key: Callable[[T], Hashable] | None = None,
    done: Mapping[Hashable, R] | None = None,
    on_result: Callable[[T, R], None] | None = None,
    describe: Callable[[list[R]], str] | None = None,
    label: str = "episodes",
    console: Console | None = None,
    progress: bool = True,
) -> list[R]:
    """`run_one(item)` for every item whose `key` is not in `done`, on `threads` worker threads (1: here, in order).

    Each new result goes to `on_result(item, result)` as soon as it is finished, always in the calling thread (append
    it to a log there, and a crash loses nothing finished). The bar shows `label`, the count, and `describe` of the
    results so far (those done before included). Returns the results of all `items` in item order. An error in
    `run_one` stops the run: items not started are dropped, running ones end (and reach `on_result`), then the error
    is raised."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if done and key is None:
        raise ValueError("resuming from `done` needs `key`, the id of an item")
    done = done or {}
    results: list = [_UNSET] * len(items)
    for i, item in enumerate(items):
        if key is not None and key(item) in done:
            results[i] = done[key(item)]
    todo = [i for i, result in enumerate(results) if result is _UNSET]
    before = len(items) - len(todo)
    title = f"{label} ({before} done before)" if before else label

    def finish(i: int, result: R) -> None:
        results[i] = result
        if on_result is not None:
            on_result(items[i], result)

    def summary() -> str:
        so_far = [r for r in results if r is not _UNSET]
        return f"{title} {describe(so_far) if describe and so_far else ''}".rstrip()

    with in_threads(lambda i: run_one(items[i]), threads) as step:
        asyncio.run(
            run_many(todo, step, threads, on_result=finish, describe=summary, console=console, progress=progress)
        )
    return results
