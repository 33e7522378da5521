"""Generator quality per task kind: generation time, expert and random policies through the real agent loop,
chance levels, and question-only baselines, printed as tables.

Scores are the task registry's official scorer (temporal IoU for FSA, the keyword judge for CCQA). The expert and
random policies run through `agentcvr.agent.Agent` against `ScriptSimulator`; question-only baselines fit their
priors on a disjoint split (seed + 1) and are scored on the measured scripts.

    .venv/bin/python benchmarks/generator_quality.py --n 1000          # ~3 min on one core
    .venv/bin/python benchmarks/generator_quality.py --n 100 --tasks NC,FSA
"""

from __future__ import annotations

import argparse
import math
import time
from statistics import mean

from rich.console import Console
from rich.table import Table

from agentcvr.policies.random_policy import RandomPolicy
from agentcvr.tasks import TASK_ORDER
from scripts_gen.checks import QUESTION_ONLY, answerable, missing_evidence, question_only, random_chance, uniform_chance
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator


def measure(task: str, n: int, seed: int) -> dict:
    started = time.perf_counter()
    scripts = generate(task, n, seed)
    seconds = time.perf_counter() - started
    simulator = ScriptSimulator({s.id: s for s in scripts})
    missing = sum(len(missing_evidence(s, simulator)) for s in scripts)
    expert = answerable(scripts, simulator=simulator)
    rand = answerable(scripts, policy=RandomPolicy(seed), simulator=simulator)
    baselines = question_only(generate(task, n, seed + 1), scripts)
    return {
        "seconds": seconds,
        "missing": missing,
        "expert": expert.mean,
        "failures": len(expert.failures),
        "calls": expert.mean_tool_calls,
        "random": rand.mean,
        "random_chance": mean(random_chance(s, 20) for s in scripts),
        "uniform": mean(uniform_chance(s) for s in scripts),
        "baselines": baselines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="scripts per task kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default=",".join(TASK_ORDER))
    args = parser.parse_args()
    console = Console(width=max(Console().width, 180))  # wide tables stay readable when piped to a file
    rows = {}
    for task in args.tasks.split(","):
        with console.status(f"{task}: generating {args.n} and running the agent loop..."):
            rows[task] = measure(task, args.n, args.seed)

    main_table = Table(
        title=f"Generated scripts: {args.n} per task, seed {args.seed} (official scorer)",
        caption="2·SE: two standard errors of a chance-level score over n items; the best of many "
        "question-only baselines is biased upward by that much.",
    )
    for column in [
        "task",
        "gen s",
        "ms/script",
        "facts missing",
        "expert",
        "expert fails",
        "expert calls",
        "random policy",
        "random chance",
        "uniform chance",
        "2·SE",
        "best question-only",
    ]:
        main_table.add_column(column, justify="left" if column in ("task", "best question-only") else "right")
    for task, r in rows.items():
        name, value = max(((k, v) for k, v in r["baselines"].items() if v is not None), key=lambda kv: kv[1])
        main_table.add_row(
            task,
            f"{r['seconds']:.2f}",
            f"{1000 * r['seconds'] / args.n:.2f}",
            str(r["missing"]),
            f"{r['expert']:.3f}",
            str(r["failures"]),
            f"{r['calls']:.1f}",
            f"{r['random']:.3f}",
            f"{r['random_chance']:.3f}",
            f"{r['uniform']:.3f}",
            f"{2 * math.sqrt(r['uniform'] * (1 - r['uniform']) / args.n):.3f}",
            f"{value:.3f} ({name}, {value - r['uniform']:+.3f})",
        )
    console.print(main_table)

    names = [k for k in QUESTION_ONLY if any(r["baselines"][k] is not None for r in rows.values())]
    baseline_table = Table(title="Question-only baselines (see only question, options, video count)")
    baseline_table.add_column("task")
    baseline_table.add_column("uniform", justify="right")
    for name in names:
        baseline_table.add_column(name, justify="right")
    for task, r in rows.items():
        cells = [f"{v:.3f}" if (v := r["baselines"][k]) is not None else "-" for k in names]
        baseline_table.add_row(task, f"{r['uniform']:.3f}", *cells)
    console.print(baseline_table)


if __name__ == "__main__":
    main()
