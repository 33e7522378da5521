"""A train-sim run's generation batch sampled several ways: the rollout engine's levers, one against another.

Ways (`--way`, repeatable, the first the baseline): `batch`, one left-padded batch a turn decoding into HF's
`DynamicCache`; `prefix`, the prefix cache (`PrefixCacheSampler`) decoding into HF's cache; `growing`, the prefix
cache decoding into `train.kv_cache.growing_cache` (what train-sim runs). The figures are how many context tokens the
model runs and the seconds: the prefix cache cuts the first, the growing cache the decoding steps' copying. This
builds the run's own GRPO trainer (its config, warm start, prompts, forced starts), takes its first `--prompts`
prompts with `grpo.num_generations` rollouts each, and samples them once each way from the same seed (in a scratch
folder: the run's own is only read):

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/rollout_prefix_cache.py --run runs/grpo-v15d --prompts 1
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/rollout_prefix_cache.py --run runs/grpo-v15d --way batch --way prefix

The ways sample from the same distribution, not necessarily the same draws (a cached pass rounds differently), so at
a temperature above 0 their rollouts can differ; the table shows each way's turns and context beside its time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

WAYS = {  # name: (prefix cache, growing cache, what the table calls it)
    "batch": (False, False, "one padded batch a turn"),
    "prefix": (True, False, "prefix cache, HF's cache"),
    "growing": (True, True, "prefix cache, growing cache"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a train-sim run folder whose warm start is finished")
    parser.add_argument("--prompts", type=int, default=1, help="prompts of the run's GRPO data, in its order")
    parser.add_argument("--task", action="append", help="only these kinds' prompts (repeatable)")
    parser.add_argument("--way", action="append", choices=sorted(WAYS), help="(repeatable) default: prefix, growing")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ways = args.way or ["prefix", "growing"]
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
        run = Run(cfg, out, resume=True, console=console)
        run.prepare()
        trainer, _ = run.grpo_trainer(run.warm_start(), out / "grpo")
        rows = [r for r in trainer.train_dataset if not args.task or r["task"] in args.task][: args.prompts]
        if not rows:
            parser.error(f"no GRPO prompt of {args.task} in {args.run}")
        inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
        rollouts = trainer.rollout_func
        table = Table(title=f"{len(inputs)} rollouts of {[r['episode_id'] for r in rows]} at T={cfg.grpo.temperature}")
        for name in ("Ways", "seconds", "x", "turns", "context tokens", "tokens run", "run / context"):
            table.add_column(name, justify="left" if name == "Ways" else "right")
        baseline = None
        for way in ways:
            rollouts.prefix_cache, rollouts.growing_cache, label = WAYS[way]
            trainer.batch_rows = inputs
            before, turns = dict(rollouts.tokens), rollouts.turns_run
            torch.manual_seed(args.seed)
            started = time.perf_counter()
            rollouts([row["prompt"] for row in inputs], trainer)
            seconds = time.perf_counter() - started
            baseline = baseline or seconds
            context, ran = (rollouts.tokens[key] - before[key] for key in ("context", "run"))
            table.add_row(
                label,
                f"{seconds:.1f}",
                f"{baseline / seconds:.2f}",
                f"{(rollouts.turns_run - turns) / len(inputs):.2f}",
                f"{context:,}",
                f"{ran:,}",
                f"{ran / context:.2f}",
            )
    console.print(table)


if __name__ == "__main__":
    main()
