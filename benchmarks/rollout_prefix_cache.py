"""A train-sim run's generation batch sampled several ways: the rollout engine's levers, one against another.

Ways (`--way`, repeatable, the first the baseline): `batch`, one left-padded batch a turn decoding into HF's
`DynamicCache`; `prefix`, the prefix cache (`PrefixCacheSampler`) decoding into HF's cache; `growing`, the prefix
cache decoding with HF `generate` into `train.kv_cache.growing_cache`; `rows`, the same cache decoded by
`train.decode.decode_rows`, which lets each row go as it stops (what train-sim runs). The figures are how many context
tokens the model runs, the rows' decoding steps per token sampled (`generate` runs a row that stopped until the
batch's longest turn ends) and the seconds: the prefix cache cuts the first, the growing cache the decoding steps'
copying, letting rows go the second. This builds the run's own GRPO trainer (its config, warm start, prompts, forced
starts), takes its first `--prompts` prompts with `grpo.num_generations` rollouts each, and samples them once each
way from the same seed (in a scratch folder: the run's own is only read):

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/rollout_prefix_cache.py --run runs/grpo-v15d --prompts 1
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/rollout_prefix_cache.py --run runs/grpo-v15d --way prefix --way rows

The ways sample from the same distribution, not necessarily the same draws (a cached pass rounds differently), so at
a temperature above 0 their rollouts can differ (`rows` draws for fewer rows once some stopped); the table shows each
way's turns and context beside its time. `peak GB` is the largest resident memory the process reached while the way
sampled (read every 0.1 s), and `+GB` that peak above the memory held when it began: e.g. on two NC prompts (16 rows of
up to 6 k tokens), where a run of session 47 was killed at 24 GB:

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/rollout_prefix_cache.py --run runs/grpo-v15d \
        --task NC --prompts 2 --way rows
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import torch
from serve_soak import rss_mib  # a sibling: this script's folder leads sys.path

WAYS = {  # name: (prefix cache, decoding, what the table calls it)
    "batch": (False, "generate", "one padded batch a turn"),
    "prefix": (True, "generate", "prefix cache, HF's cache"),
    "growing": (True, "growing", "prefix cache, growing cache"),
    "rows": (True, "rows", "prefix cache, growing cache, stopped rows let go"),
}


class PeakMemory:
    """The largest resident size of this process while inside the `with` (MiB, sampled every `every` seconds), and
    the size when it began."""

    def __init__(self, every: float = 0.1):
        self.every, self.start, self.peak = every, 0.0, 0.0
        self._done = threading.Event()

    @staticmethod
    def resident() -> float:
        return rss_mib(os.getpid())

    def _watch(self) -> None:
        while not self._done.wait(self.every):
            self.peak = max(self.peak, self.resident())

    def __enter__(self) -> PeakMemory:
        self.start = self.peak = self.resident()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self.resident())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a train-sim run folder whose warm start is finished")
    parser.add_argument("--prompts", type=int, default=1, help="prompts of the run's GRPO data, in its order")
    parser.add_argument("--task", action="append", help="only these kinds' prompts (repeatable)")
    parser.add_argument("--way", action="append", choices=sorted(WAYS), help="(repeatable) default: growing, rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ways = args.way or ["growing", "rows"]
    if not (args.run / "warmstart" / "DONE").exists():
        parser.error(f"--run {args.run} has no finished warm start (warmstart/DONE)")

    from rich.console import Console
    from rich.table import Table

    from train.config import run_config
    from train.pipeline import Run

    console = Console()
    cfg = run_config(args.run)
    with tempfile.TemporaryDirectory() as scratch:  # the run's folder is only read: it may be training
        out = Path(scratch)
        (out / "warmstart").symlink_to((args.run / "warmstart").resolve())
        if (args.run / "base").is_dir():  # a dequantized GGUF base: not built again
            (out / "base").symlink_to((args.run / "base").resolve())
        run = Run(cfg, out, resume=True, console=console)
        run.prepare()
        trainer, _ = run.grpo_trainer(run.warm_start(), out / "grpo")
        rows = [r for r in trainer.train_dataset if not args.task or r["task"] in args.task][: args.prompts]
        if not rows:
            parser.error(f"no GRPO prompt of {args.task} in {args.run}")
        inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
        rollouts = trainer.rollout_func
        table = Table(title=f"{len(inputs)} rollouts of {[r['episode_id'] for r in rows]} at T={cfg.grpo.temperature}")
        columns = ("Ways", "seconds", "x", "turns", "context tokens", "tokens run", "run / context")
        columns += ("decoded / sampled", "peak GB", "+GB")
        for name in columns:
            table.add_column(name, justify="left" if name == "Ways" else "right")
        baseline = None
        for way in ways:
            rollouts.prefix_cache, rollouts.decoding, label = WAYS[way]
            trainer.batch_rows = inputs
            before, turns = dict(rollouts.tokens), rollouts.turns_run
            torch.manual_seed(args.seed)
            started = time.perf_counter()
            with PeakMemory() as memory:
                rollouts([row["prompt"] for row in inputs], trainer)
            seconds = time.perf_counter() - started
            baseline = baseline or seconds
            context, ran, sampled, decoded = (
                rollouts.tokens[key] - before[key] for key in ("context", "run", "sampled", "decoded")
            )
            table.add_row(
                label,
                f"{seconds:.1f}",
                f"{baseline / seconds:.2f}",
                f"{(rollouts.turns_run - turns) / len(inputs):.2f}",
                f"{context:,}",
                f"{ran:,}",
                f"{ran / context:.2f}",
                f"{decoded / sampled:.2f}",
                f"{memory.peak / 1024:.1f}",
                f"{(memory.peak - memory.start) / 1024:.1f}",
            )
    console.print(table)


if __name__ == "__main__":
    main()
