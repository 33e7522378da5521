"""Is there anything for GRPO to learn from? Rollout groups sampled from a warm start, without training.

GRPO's advantage is a reward's deviation from its group's mean: a group whose G rollouts all earn the same reward
teaches nothing. On the H200 (session 17) a gpu-looker run from looker-v5's warm start had 75-100 % of its groups at
zero spread for 25 steps (TRL's `frac_reward_zero_std`) and changed 2 of 200 held-out episodes. This samples the
groups GRPO would sample, per task kind and temperature, and reports the share of groups with a spread in the
trained reward, in the official and in the dense correctness (`reward.dense`: PSS position accuracy, FSA IoU), and
how many distinct answers a group holds:

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/grpo_signal.py --run runs/gpu-sig \
        --warm-start runs/smol-v5/warmstart --task PSS --task FSA --prompts 4 --temperature 1.0 --temperature 1.5

The run folder is a train-sim folder for the preset (default gpu-looker, on the CPU here); the warm start is copied
into it once (its merged weights may be left out: they are rebuilt from the base and its adapter).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="train-sim run folder (made if missing)")
    parser.add_argument("--warm-start", type=Path, help="a finished warm-start folder to copy into RUN/warmstart")
    parser.add_argument("--preset", default="gpu-looker")
    parser.add_argument("-o", "--override", action="append", default=[], help="config override key=value")
    parser.add_argument("--task", action="append", help="task kinds to sample (repeatable); default all the run's")
    parser.add_argument("--prompts", type=int, default=4, help="groups (distinct episodes) per task kind")
    parser.add_argument("--temperature", type=float, action="append", help="sampling temperatures (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from train.config import load_config
    from train.pipeline import Run
    from train.signal import sample_groups

    overrides = ["grpo.use_cpu=true", "eval.device=cpu", *args.override]
    cfg = load_config(args.preset, overrides)
    if args.warm_start and not (args.run / "warmstart" / "DONE").exists():
        if not (args.warm_start / "DONE").exists():
            parser.error(f"--warm-start {args.warm_start} is not a finished warm start (no DONE)")
        args.run.mkdir(parents=True, exist_ok=True)
        shutil.copytree(args.warm_start, args.run / "warmstart", ignore=shutil.ignore_patterns("*.pt"))
    tasks = args.task or cfg.data.tasks
    unknown = sorted(set(tasks) - set(cfg.data.tasks))
    if unknown:
        parser.error(f"--task {unknown} not in the preset's data.tasks {cfg.data.tasks}")
    console = Console()
    run = Run(cfg, args.run, resume=True, console=console)
    run.prepare()
    trainer, _ = run.grpo_trainer(run.warm_start(), args.run / "signal")
    rows = {task: [r for r in trainer.train_dataset if r["task"] == task][: args.prompts] for task in tasks}
    g = cfg.grpo.num_generations
    results = []
    for temperature in args.temperature or [cfg.grpo.temperature]:
        trainer.args.temperature = temperature
        for task in tasks:
            figures = sample_groups(trainer, rows[task], args.seed)
            results.append({"task": task, "temperature": temperature, **figures})
            console.print(summary_line(results[-1]))

    table = Table(title=f"GRPO signal: {args.prompts} groups of {g} per task kind, from {args.run / 'warmstart'}")
    for column in (
        "task",
        "T",
        "groups",
        "spread %",
        "spread % official",
        "spread % dense",
        "answers/group",
        "calls",
        "turns",
        "r(calls, reward)",
        "reward",
        "correct %",
        "s",
    ):
        table.add_column(column, justify="left" if column == "task" else "right")
    for r in results:
        table.add_row(
            r["task"],
            f"{r['temperature']:g}",
            str(r["groups"]),
            f"{100 * r['spread']:.0f}",
            f"{100 * r['spread_official']:.0f}",
            f"{100 * r['spread_dense']:.0f}",
            f"{r['answers_per_group']:.1f}",
            f"{r['calls']:.2f}",
            f"{r['turns']:.2f}",
            correlation(r),
            f"{r['reward']:.2f}",
            f"{100 * r['correct']:.0f}",
            f"{r['seconds']:.0f}",
        )
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps({"preset": args.preset, "overrides": overrides, "results": results}, indent=1))


def summary_line(r: dict) -> str:
    return (
        f"{r['task']} T={r['temperature']:g}: spread in {100 * r['spread']:.0f} % of {r['groups']} groups "
        f"(official {100 * r['spread_official']:.0f} %, dense {100 * r['spread_dense']:.0f} %), "
        f"{r['answers_per_group']:.1f} answers a group, {r['calls']:.2f} calls and {r['turns']:.2f} turns a rollout, "
        f"r(calls, reward) {correlation(r)}, "
        f"{r['seconds']:.0f} s"
    )


def correlation(r: dict) -> str:
    """The within-group correlation of tool calls and reward, or '-' where no group varied in both."""
    value = r["calls_reward_correlation"]
    return "-" if value is None else f"{value:+.2f}"


if __name__ == "__main__":
    main()
