"""One loop over many items (episodes, sim/real pairs, checks), in the shape of simple-evals' `map_with_progress`:
the caller says how to run one item; this owns the worker threads, the progress bar with a running summary, and
resume (items finished before are skipped and returned as they were).

    results = map_with_progress(run_one, episodes, key=lambda e: e.id, done=read_back, on_result=append_line,
                                describe=lambda rs: f"success {mean(r.official for r in rs):.0%}")

`agentcvr run` (eval/runner.py), the fidelity run (eval/fidelity.py), the held-out evaluation (train/evaluate.py)
and the generator's answerability check (scripts_gen/checks.py) all go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

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
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    bar_console = console or Console(stderr=True)
    with Progress(*columns, console=bar_console, transient=False, disable=not progress) as bar:
        task = bar.add_task(title, total=len(todo))

        def finish(i: int, result: R) -> None:
            results[i] = result
            if on_result is not None:
                on_result(items[i], result)
            summary = describe([r for r in results if r is not _UNSET]) if describe else ""
            bar.update(task, advance=1, description=f"{title} {summary}".rstrip())

        if threads == 1 or len(todo) <= 1:
            for i in todo:
                finish(i, run_one(items[i]))
        else:
            _in_threads(run_one, items, todo, threads, finish)
    return results


def _in_threads(run_one: Callable, items: Sequence, todo: list[int], threads: int, finish: Callable) -> None:
    """After the first error no new item starts; the running ones still end and are finished before it is raised.
    An interrupt (Ctrl-C) or a failing `on_result` drops the items not started at once."""
    error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=min(threads, len(todo)), thread_name_prefix="item") as pool:
        running = {pool.submit(run_one, items[i]): i for i in todo}
        try:
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    i = running.pop(future)
                    if future.cancelled():
                        continue
                    if future.exception() is None:
                        finish(i, future.result())
                    elif error is None:
                        error = future.exception()
                        _cancel(running)
        except BaseException:
            _cancel(running)
            raise
    if error is not None:
        raise error


def _cancel(futures) -> None:
    for future in futures:
        future.cancel()
