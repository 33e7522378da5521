"""Paired comparison of masters measured by `master_choice.py` on the same episodes: is a difference beyond noise?

Each file is one policy's results (`<work>/<perception>/<name>.jsonl`). Against the first (the baseline) every other
is compared on the episodes both finished: success of each, the paired difference with a 95 % bootstrap interval
(episodes resampled together, 10,000 draws), the episodes it won and lost, the answers it kept, and the difference per
task kind. GRPO's target (+5 points over its warm start, beyond the seed spread) is read off this table.

    python benchmarks/paired_masters.py runs/table12m/sim/trained_looker-v3.jsonl \
        runs/table12m/sim/trained_runs_dev_grpo-s0.jsonl runs/table12m/sim/trained_runs_dev_grpo-s1.jsonl

`--plot FILE.png` draws each difference with its interval beside the target line (`--target`, +5 by default).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcvr.tasks import TASK_ORDER
from eval.record import Record, read_latest


def finished(path: Path) -> dict[str, Record]:
    """The scored records of a results file, by episode."""
    if not path.is_file():
        raise FileNotFoundError(f"no results file {path}")
    records, _ = read_latest(path)
    return {key: r for key, r in records.items() if r.official is not None}


def bootstrap(differences: list[float], draws: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """The 95 % interval of the mean paired difference."""
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(sum(rng.choice(differences) for _ in range(n)) / n for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def compare(baseline: dict[str, Record], other: dict[str, Record]) -> dict:
    keys = sorted(set(baseline) & set(other))
    if not keys:
        raise ValueError("the two files share no finished episode")
    diffs = [other[k].official - baseline[k].official for k in keys]
    per_task = {}
    for task in TASK_ORDER:
        mine = [d for k, d in zip(keys, diffs, strict=True) if baseline[k].task == task]
        if mine:
            per_task[task] = 100 * sum(mine) / len(mine)
    low, high = bootstrap(diffs)
    return {
        "n": len(keys),
        "baseline": 100 * sum(baseline[k].official for k in keys) / len(keys),
        "other": 100 * sum(other[k].official for k in keys) / len(keys),
        "difference": 100 * sum(diffs) / len(keys),
        "interval": (100 * low, 100 * high),
        "won": sum(d > 0 for d in diffs),
        "lost": sum(d < 0 for d in diffs),
        "same_answer": sum(baseline[k].output == other[k].output for k in keys),
        "per_task": per_task,
    }


def plot(rows: dict[Path, dict], baseline: str, target: float, out: Path) -> None:
    """Each policy's paired difference and its 95 % interval, one row each, beside zero and the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [path.stem for path in rows]
    figure, axes = plt.subplots(figsize=(8.5, 0.5 * len(rows) + 1.6))
    for y, row in enumerate(rows.values()):
        low, high = row["interval"]
        axes.errorbar(
            row["difference"],
            y,
            xerr=[[row["difference"] - low], [high - row["difference"]]],
            fmt="o",
            color="tab:blue",
            capsize=4,
        )
        axes.annotate(
            f"{row['difference']:+.1f} (won {row['won']}, lost {row['lost']})",
            (row["difference"], y),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
        )
    axes.axvline(0, color="grey", linewidth=1)
    axes.axvline(target, color="tab:red", linestyle="--", linewidth=1, label=f"target {target:+g}")
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.set_ylim(-0.7, len(names) - 0.3)
    axes.invert_yaxis()
    axes.set_xlabel(f"paired difference over {baseline}, points (95 % interval)", fontsize=9)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", type=Path, help="the baseline's results file")
    parser.add_argument("others", type=Path, nargs="+", help="results files compared with it")
    parser.add_argument("--plot", type=Path, help="also draw the differences into this PNG")
    parser.add_argument("--target", type=float, default=5.0, help="the difference the plot marks as the target")
    args = parser.parse_args()
    base = finished(args.baseline)
    rows = {path: compare(base, finished(path)) for path in args.others}
    tasks = [t for t in TASK_ORDER if any(t in row["per_task"] for row in rows.values())]
    table = Table(title=f"paired against {args.baseline.stem} (points of success)")
    for name in ["policy", "n", "baseline %", "this %", "diff", "95 % interval", "won", "lost", "same answer", *tasks]:
        table.add_column(name, justify="left" if name == "policy" else "right")
    for path, row in rows.items():
        table.add_row(
            path.stem,
            str(row["n"]),
            f"{row['baseline']:.1f}",
            f"{row['other']:.1f}",
            f"{row['difference']:+.1f}",
            f"{row['interval'][0]:+.1f} .. {row['interval'][1]:+.1f}",
            str(row["won"]),
            str(row["lost"]),
            f"{row['same_answer']}/{row['n']}",
            *(f"{row['per_task'][t]:+.0f}" if t in row["per_task"] else "" for t in tasks),
        )
    Console().print(table)
    if args.plot:
        plot(rows, args.baseline.stem, args.target, args.plot)
        Console().print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
