"""The learning ladder: which rung GRPO in the script simulator moves, before and after, per task kind and seed.

    .venv/bin/python benchmarks/learning_ladder.py --preset cpu-learn --seeds 0 1 --out runs/ladder
    .venv/bin/python benchmarks/learning_ladder.py --variant vanilla= --variant tas=methods.tas.enabled=true ...

A policy answers right only if it acts validly, looks where the evidence is, and reads what it saw; the rungs are
measured on the held-out scripts of the run, before GRPO (the warm start) and after:
- valid: the share of the policy's turns that were valid actions;
- seen: the share of episodes whose observations held every evidence fact;
- reading: success when the teacher makes the calls and the policy only answers (its reading, apart from looking);
- success: the official CrossVid score of the policy's own episodes.

A variant is a name and train-sim overrides (`NAME=key=value,key=value`; by default the evidence reward off and on).
Each (seed, variant) pair is one `agentcvr train-sim` run in `OUT/seed{S}-{NAME}`; the runs of one seed share its warm
start (the first variant trains it, the others copy it), so variants are compared on the same starting policy.
`--jobs` runs go at once, one core each. Finished runs are reused, so after a crash the same command resumes
(train-sim's own `--resume` continues a run from its last checkpoint). Prints the table (also OUT/ladder.md) and
draws the GRPO curves of every run in OUT/ladder_curves.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from train.monitoring import read_metrics

RUNGS = ("valid", "seen", "reading", "success")
SHARED = ("warmstart", "eval_teacher.json", "eval_warmstart.json", "eval_warmstart_reading.json")
CURVES = [
    ("format reward", "rewards/format/mean"),
    ("correctness reward", "rewards/correctness/mean"),
    ("evidence reward (share of facts seen)", "rewards/evidence/mean"),
    ("turns per episode", "episode/turns"),
    ("tool calls per episode", "episode/tool_calls"),
    ("KL to warm start", "kl"),
]


DEFAULT_VARIANTS = ["evidence0=reward.evidence=0", "evidence0.5=reward.evidence=0.5"]


def parse_variant(text: str) -> tuple[str, list[str]]:
    """`name=key=value,key=value` -> (name, overrides); `name=` has none."""
    name, _, rest = text.partition("=")
    if not name or not name.replace(".", "").replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"variant {text!r}: write NAME=key=value,key=value (NAME of letters, digits, . - _)")
    return name, [item for item in rest.split(",") if item]


def train(
    preset: str, folder: Path, seed: int, overrides: list[str], log: Path, finished: str = "eval_final_reading.json"
) -> float:
    """One train-sim run (resumed if the folder exists); returns its wall time. The run is finished when the file
    `finished` exists in its folder."""
    command = [
        sys.executable, "-m", "agentcvr.cli", "train-sim", "--preset", preset, "--out", str(folder), "--resume",
        "-o", f"seed={seed}",
    ]  # fmt: skip
    for override in overrides:
        command += ["-o", override]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    started = time.perf_counter()
    with log.open("a") as handle:
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, check=False)
    if done.returncode != 0 or not (folder / finished).exists():
        raise RuntimeError(f"train-sim did not finish (rc {done.returncode}) for {folder}: see {log}")
    return time.perf_counter() - started


def share_warm_start(source: Path, target: Path) -> None:
    """The target run starts from the source's warm start and its before-GRPO evaluations."""
    target.mkdir(parents=True, exist_ok=True)
    for name in SHARED:
        if (target / name).exists() or not (source / name).exists():
            continue
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name)
        else:
            shutil.copy2(source / name, target / name)


def rungs(stats: dict, reading: dict) -> dict[str, float]:
    turns = stats["turns"]
    return {
        "valid": 1.0 - stats["format_errors"] / turns if turns else 0.0,
        "seen": stats["evidence_seen"],
        "reading": reading["success"],
        "success": stats["success"],
    }


def ladder(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """{stage: {task or 'overall': {rung: value}}} of one finished run."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for stage, own, reading in (("before", "warmstart", "warmstart_reading"), ("after", "final", "final_reading")):
        report = json.loads((folder / f"eval_{own}.json").read_text())
        read = json.loads((folder / f"eval_{reading}.json").read_text())
        found[stage] = {task: rungs(report["tasks"][task], read["tasks"][task]) for task in report["tasks"]}
        found[stage]["overall"] = rungs(report["overall"], read["overall"])
    return found


def table(results: dict[tuple[int, str], dict], variants: dict[str, list[str]], seeds: list[int]) -> str:
    """Markdown: per variant and task kind, each rung before -> after GRPO (mean over seeds, and each seed's
    change)."""
    lines = []
    for name, overrides in variants.items():
        runs = [results[(seed, name)] for seed in seeds]
        tasks = [t for t in runs[0]["before"] if t != "overall"] + ["overall"]
        lines += [
            f"\n{name} ({', '.join(overrides) or 'the preset'}), seeds {', '.join(map(str, seeds))}: before -> after "
            "GRPO, mean over seeds (change per seed, points)\n",
            "| task | " + " | ".join(RUNGS) + " |",
            "| --- |" + " --- |" * len(RUNGS),
        ]
        for task in tasks:
            cells = []
            for rung in RUNGS:
                before = [run["before"][task][rung] for run in runs]
                after = [run["after"][task][rung] for run in runs]
                changes = " ".join(f"{(a - b) * 100:+.0f}" for a, b in zip(after, before, strict=True))
                cells.append(f"{statistics.fmean(before) * 100:.1f} -> {statistics.fmean(after) * 100:.1f} ({changes})")
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(folders: dict[tuple[int, str], Path], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    names = list(dict.fromkeys(name for _, name in folders))
    colors = {name: f"C{i}" for i, name in enumerate(names)}
    first_seed = min(seed for seed, _ in folders)
    for (seed, name), folder in folders.items():
        metrics = read_metrics(folder / "metrics.jsonl") if (folder / "metrics.jsonl").exists() else []
        for ax, (name, key) in zip(axes.flat, CURVES, strict=True):
            points = [(row["step"], row[key]) for row in metrics if key in row]
            if not points:
                continue
            steps, values = zip(*points, strict=True)
            smooth = [statistics.fmean(values[max(0, i - 4) : i + 1]) for i in range(len(values))]
            style = "-" if seed == first_seed else "--"
            ax.plot(steps, smooth, style, color=colors[name], label=f"{name}, seed {seed}")
            ax.set_title(name)
            ax.set_xlabel("GRPO step")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title + " (5-step moving means)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu-learn", help="train-sim preset (name or YAML)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--variant",
        action="append",
        help="NAME=key=value,key=value (repeatable; the first trains the warm start). Default: "
        + " ".join(DEFAULT_VARIANTS),
    )
    parser.add_argument("--out", type=Path, default=Path("runs/ladder"))
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one core each)")
    parser.add_argument("-o", "--override", action="append", default=[], help="key=value on the preset")
    args = parser.parse_args()

    variants = dict(parse_variant(text) for text in args.variant or DEFAULT_VARIANTS)
    args.out.mkdir(parents=True, exist_ok=True)
    folders = {(s, name): args.out / f"seed{s}-{name}" for name in variants for s in args.seeds}
    first, *rest = variants

    def job(seed: int, name: str) -> None:
        folder = folders[(seed, name)]
        if name != first:
            share_warm_start(folders[(seed, first)], folder)
        print(f"{time.strftime('%H:%M:%S')} start seed {seed}, {name}: {folder}/train.log", flush=True)
        overrides = variants[name] + args.override
        seconds = train(args.preset, folder, seed, overrides, args.out / f"{folder.name}.log")
        print(f"{time.strftime('%H:%M:%S')} done  seed {seed}, {name} in {seconds:.0f} s", flush=True)

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # warm starts first, then the runs that share them
        list(pool.map(lambda seed: job(seed, first), args.seeds))
        list(pool.map(lambda pair: job(*pair), [(s, name) for name in rest for s in args.seeds]))

    results = {key: ladder(folder) for key, folder in folders.items()}
    plot(folders, args.out / "ladder_curves.png", f"train-sim {args.preset}: GRPO curves")
    publish(args.out, "ladder", f"Learning ladder ({args.preset})", table(results, variants, args.seeds), results)
    return 0


def publish(out: Path, stem: str, heading: str, text: str, results: dict[tuple[int, str], object]) -> None:
    """OUT/STEM.md (the table), OUT/STEM.json (results by 'seed/variant'); prints the table and where they are."""
    (out / f"{stem}.md").write_text(f"# {heading}\n\n{text}\n")
    (out / f"{stem}.json").write_text(json.dumps({f"{s}/{n}": r for (s, n), r in results.items()}, indent=1))
    print(text)
    print(f"\n{out}/{stem}.md, {out}/{stem}.json, {out}/{stem}_curves.png")


if __name__ == "__main__":
    raise SystemExit(main())
