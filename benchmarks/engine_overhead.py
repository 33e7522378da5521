"""The engine's own overhead per item: the same predictor through a bare loop and through the engine, at
concurrency 1 and 64, for both predictor kinds.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/engine_overhead.py [--items 4000]

- remote (async): a predictor whose `predict` returns at once. Bare: `await predict(item)` under a semaphore.
  Engine: `eval.runner.run_items`, i.e. records with the spec, retries bookkeeping, JSONL appends (flushed),
  the running official score and the progress bar (to a throwaway console).
- local (threads): a function that returns at once. Bare: a for loop (1) or a thread pool map (64). Engine: the same
  `run_items` with the function on worker threads (`agentcvr.engine.in_thread`, as the agent predictor of `agentcvr
  run` and `eval crossvid --mode agent` runs it, a cancel token per item).
The predictor costs ~nothing, so (engine - bare) / items is what the engine adds; the target is <= 1.42 ms per item
(what the CrossVid harness measured over a bare httpx client before the engine).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from agentcvr.engine import in_thread
from agentcvr.spec import Component, RunSpec
from eval.crossvid.loader import CrossVidItem
from eval.runner import Reply, RunConfig, run_items

SPEC = RunSpec(policy=Component(name="instant"))
TARGET_MS = 1.42


class Instant:
    """A remote predictor that answers at once."""

    async def predict(self, item: CrossVidItem) -> Reply:
        return Reply(output="C")


def remote(items: list[CrossVidItem], concurrency: int, folder: Path) -> tuple[float, float]:
    """(bare seconds, engine seconds) for the async path."""
    predictor = Instant()

    async def bare() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(item: CrossVidItem) -> None:
            async with gate:
                await predictor.predict(item)

        await asyncio.gather(*(one(item) for item in items))

    started = time.perf_counter()
    asyncio.run(bare())
    bare_s = time.perf_counter() - started
    out = folder / f"remote-{concurrency}.jsonl"
    started = time.perf_counter()
    asyncio.run(run_items(items, predictor, out, RunConfig(concurrency=concurrency), spec=SPEC, console=_quiet()))
    return bare_s, time.perf_counter() - started


def run_one(item: CrossVidItem) -> str:
    return "C"


class OnThreads:
    """A local predictor: `run_one` on a pool of worker threads, as `eval.agent_mode.AgentPredictor` runs the loop."""

    def __init__(self, pool: ThreadPoolExecutor):
        self.pool = pool

    async def predict(self, item: CrossVidItem) -> Reply:
        return Reply(output=await in_thread(self.pool, lambda: run_one(item)))


def local(items: list[CrossVidItem], threads: int, folder: Path) -> tuple[float, float]:
    """(bare seconds, engine seconds) for the threaded path, a record appended per item as `agentcvr run` does."""

    started = time.perf_counter()
    if threads == 1:
        for item in items:
            run_one(item)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run_one, items))
    bare_s = time.perf_counter() - started
    out = folder / f"local-{threads}.jsonl"
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        run = run_items(items, OnThreads(pool), out, RunConfig(concurrency=threads), spec=SPEC, console=_quiet())
        asyncio.run(run)
    return bare_s, time.perf_counter() - started


def _quiet() -> Console:
    return Console(file=io.StringIO(), force_terminal=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4000)
    args = parser.parse_args()
    items = [CrossVidItem(task="NC", raw={"id": i, "answer": "C"}) for i in range(args.items)]
    print(f"{args.items} items, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{'path':<8} {'conc':>4} {'bare ms/item':>13} {'engine ms/item':>15} {'overhead ms/item':>17} {'ratio':>7}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for name, path in (("remote", remote), ("local", local)):
            for concurrency in (1, 64):
                bare_s, engine_s = path(items, concurrency, Path(folder))
                bare_ms, engine_ms = 1000 * bare_s / len(items), 1000 * engine_s / len(items)
                worst = max(worst, engine_ms - bare_ms)
                print(
                    f"{name:<8} {concurrency:>4} {bare_ms:>13.4f} {engine_ms:>15.4f} {engine_ms - bare_ms:>17.4f} "
                    f"{engine_s / bare_s:>7.1f}"
                )
    print(f"worst overhead {worst:.3f} ms/item (target <= {TARGET_MS} ms): {'ok' if worst <= TARGET_MS else 'OVER'}")


if __name__ == "__main__":
    main()
