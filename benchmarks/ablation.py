"""Ablation of the companion papers' methods: held-out success against completions generated, from one warm start.

    .venv/bin/python benchmarks/ablation.py --preset cpu-learn --seeds 0 1 --out runs/ablation
    .venv/bin/python benchmarks/ablation.py --warm-start-from 'runs/ladder/seed{seed}-evidence0' -o grpo.max_seconds=300

Variants (default): vanilla GRPO, +TAS, +replay, +replay+TAS, +hints (replay with template hints), GRPO-CARE, and
OmniJigsaw pretraining (GRPO on puzzles made from the same scripts). Each (seed, variant) pair is one train-sim run,
with the learning ladder's machinery (`benchmarks/learning_ladder.py`: one shared warm start per seed, runs resumed
when the command is repeated), every checkpoint kept, and train-sim's own evaluations off.

Each checkpoint (and the warm start, at 0) is then evaluated greedily on the first `--probe-per-task` held-out scripts
of each task kind: success, evidence seen, valid actions. Its x is the completions generated so far, step x
prompts_per_step x num_generations: every variant generates that many per step (replay adds stored groups, which
are not generated). Results are cached per checkpoint (`RUN/probe/*.json`), so a crash loses at most one.

Prints the table of completions needed to reach the target (the seed's warm start's held-out success plus `--gain`
points; the warm start is evaluated once per variant, and the spread of those evaluations is the probe's noise) and
each variant's final levels; writes OUT/ablation.md, OUT/ablation.json and OUT/ablation_curves.png.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from learning_ladder import (  # a sibling: this script's folder leads sys.path
    parse_variant,
    publish,
    share_warm_start,
    train,
)

DEFAULT_VARIANTS = [
    "vanilla=",
    "tas=methods.tas.enabled=true",
    "replay=methods.replay.enabled=true",
    "replay-tas=methods.replay.enabled=true,methods.tas.enabled=true",
    "hints=methods.replay.enabled=true,methods.replay.hints=template",
    "care=methods.care.enabled=true",
    "jigsaw=methods.jigsaw.enabled=true",
]
RUN_SETTINGS = ["eval.enabled=false", "grpo.save_total_limit=1000"]  # curves come from every checkpoint instead
METRICS = (("success", "held-out success"), ("seen", "evidence seen"), ("valid", "valid actions"))


def checkpoints(folder: Path) -> list[tuple[str, Path, int]]:
    """(name, policy folder, GRPO step) of the warm start, every complete checkpoint and the final policy."""
    points = [("warmstart", folder / "warmstart", 0)]
    for checkpoint in sorted((folder / "grpo").glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
        if (checkpoint / "COMPLETE").exists():
            points.append((checkpoint.name, checkpoint, int(checkpoint.name.rsplit("-", 1)[1])))
    final = folder / "final"
    if (final / "DONE").exists() and int((final / "DONE").read_text()) not in {step for *_, step in points}:
        points.append(("final", final, int((final / "DONE").read_text())))
    return points


def probe(folder: Path, per_task: int, batch_size: int = 1) -> list[dict]:
    """The held-out probe of every point of one finished run, cached per point. One turn at a time by default:
    batched greedy evaluation does not repeat itself (benchmarks/eval_batching.py)."""
    from agentcvr.components import make_training_perception
    from agentcvr.interfaces import Limits
    from agentcvr.policies.hf_policy import HFPolicy
    from scripts_gen.generate import generate
    from train.config import run_config
    from train.evaluate import evaluate

    cfg = run_config(folder)
    scripts = [s for task in cfg.data.tasks for s in generate(task, per_task, cfg.data.heldout_seed)]
    table = {s.id: s for s in scripts}
    limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
    per_step = cfg.grpo.prompts_per_step * cfg.grpo.num_generations
    (folder / "probe").mkdir(exist_ok=True)
    found = []
    for name, policy_dir, step in checkpoints(folder):
        cache = folder / "probe" / f"{name}-{per_task}-b{batch_size}.json"
        if not cache.exists():
            policy = HFPolicy(policy_dir, temperature=0.0, max_new_tokens=cfg.eval.max_new_tokens)
            perception = make_training_perception(cfg, table)
            report = evaluate(policy, scripts, perception, limits, batch_size=batch_size)["overall"]
            turns = report["turns"]
            point = {
                "name": name,
                "step": step,
                "completions": step * per_step,
                "success": report["success"],
                "seen": report["evidence_seen"],
                "valid": 1.0 - report["format_errors"] / turns if turns else 0.0,
            }
            cache.write_text(json.dumps(point))
        found.append(json.loads(cache.read_text()))
    return sorted(found, key=lambda p: p["step"])


def completions_to(points: list[dict], target: float) -> int | None:
    """Completions generated when held-out success first reached `target` (None: never)."""
    return next((p["completions"] for p in points if p["step"] > 0 and p["success"] >= target - 1e-9), None)


def report(curves: dict[tuple[int, str], list[dict]], variants: list[str], seeds: list[int], gain: float) -> str:
    """The table. A seed's variants share one warm start, evaluated once per variant: the batched greedy evaluation
    is not bit-exact across batch layouts, so their spread is the probe's noise, and their mean is the start."""
    start = {s: statistics.fmean(curves[(s, name)][0]["success"] for name in variants) for s in seeds}
    spread = {s: [curves[(s, name)][0]["success"] for name in variants] for s in seeds}
    lines = [
        f"Completions generated until held-out success first reaches the seed's warm start + {gain * 100:.0f} points "
        "(per seed; '-' = not reached), and the last checkpoint's levels (mean over seeds, %).",
        "",
        "| variant | " + " | ".join(f"seed {s}: to target" for s in seeds) + " | vs vanilla | completions | "
        "success | seen | valid |",
        "| --- |" + " --- |" * (len(seeds) + 5),
    ]
    baseline = {s: completions_to(curves[(s, variants[0])], start[s] + gain) for s in seeds}
    for name in variants:
        reached = {s: completions_to(curves[(s, name)], start[s] + gain) for s in seeds}
        ratios = [reached[s] / baseline[s] for s in seeds if reached[s] and baseline[s]]
        ratio = f"{statistics.fmean(ratios):.2f}x" if ratios else "-"
        last = [curves[(s, name)][-1] for s in seeds]
        cells = [str(reached[s]) if reached[s] is not None else "-" for s in seeds]
        levels = [f"{statistics.fmean(p[key] for p in last) * 100:.1f}" for key, _ in METRICS]
        done = statistics.fmean(p["completions"] for p in last)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} | {done:.0f} | " + " | ".join(levels) + " |")
    first = [curves[(s, variants[0])][0] for s in seeds]
    lines += [
        "",
        "Warm start (shared by a seed's variants): success "
        + ", ".join(
            f"seed {s} {start[s] * 100:.1f} % (its evaluations {min(spread[s]) * 100:.0f}-{max(spread[s]) * 100:.0f})"
            for s in seeds
        )
        + "; "
        + ", ".join(f"{label} {statistics.fmean(p[key] for p in first) * 100:.1f} %" for key, label in METRICS[1:]),
    ]
    return "\n".join(lines)


def plot(curves: dict[tuple[int, str], list[dict]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    names = list(dict.fromkeys(name for _, name in curves))
    seeds = sorted({seed for seed, _ in curves})
    for ax, (key, label) in zip(axes, METRICS, strict=True):
        for i, name in enumerate(names):
            for j, seed in enumerate(seeds):
                points = curves[(seed, name)]
                ax.plot(
                    [p["completions"] for p in points],
                    [p[key] * 100 for p in points],
                    "-o" if j == 0 else "--o",
                    color=f"C{i}",
                    markersize=3,
                    label=f"{name}" if j == 0 else None,
                )
        ax.set_title(label + " (%)")
        ax.set_xlabel("completions generated")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{title} (solid: seed {seeds[0]}; dashed: other seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu-learn", help="train-sim preset (name or YAML)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--variant", action="append", help="NAME=key=value,... (repeatable; the first is the baseline)")
    parser.add_argument("--out", type=Path, default=Path("runs/ablation"))
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one core each)")
    parser.add_argument("-o", "--override", action="append", default=[], help="key=value on the preset, every run")
    parser.add_argument("--probe-per-task", type=int, default=20, help="held-out scripts per task kind per point")
    parser.add_argument("--probe-batch", type=int, default=1, help="turns generated together (1: repeatable)")
    parser.add_argument("--gain", type=float, default=0.05, help="target: warm start's success + this (0.05 = 5 pts)")
    parser.add_argument(
        "--warm-start-from",
        help="reuse an earlier run's warm start per seed, e.g. 'runs/ladder/seed{seed}-evidence0' (same preset)",
    )
    args = parser.parse_args()

    variants = dict(parse_variant(text) for text in args.variant or DEFAULT_VARIANTS)
    names = list(variants)
    args.out.mkdir(parents=True, exist_ok=True)
    folders = {(s, name): args.out / f"seed{s}-{name}" for name in names for s in args.seeds}

    def job(seed: int, name: str) -> None:
        folder = folders[(seed, name)]
        source = Path(args.warm_start_from.format(seed=seed)) if args.warm_start_from else folders[(seed, names[0])]
        if source != folder:
            if not (source / "warmstart" / "DONE").exists():
                raise FileNotFoundError(f"no finished warm start in {source}")
            share_warm_start(source, folder)
        print(f"{time.strftime('%H:%M:%S')} start seed {seed}, {name}: {folder}/train.log", flush=True)
        overrides = variants[name] + RUN_SETTINGS + args.override
        seconds = train(args.preset, folder, seed, overrides, args.out / f"{folder.name}.log", finished="final/DONE")
        print(f"{time.strftime('%H:%M:%S')} trained seed {seed}, {name} in {seconds:.0f} s; probing", flush=True)
        probe(folder, args.probe_per_task, args.probe_batch)

    order = [(s, name) for name in names for s in args.seeds]  # the baseline first: it trains the warm starts
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        if not args.warm_start_from:
            list(pool.map(lambda seed: job(seed, names[0]), args.seeds))
            order = order[len(args.seeds) :]
        list(pool.map(lambda pair: job(*pair), order))

    curves = {key: probe(folder, args.probe_per_task, args.probe_batch) for key, folder in folders.items()}
    plot(curves, args.out / "ablation_curves.png", f"train-sim {args.preset}: companion methods")
    heading = f"Ablation of the companion methods ({args.preset})"
    publish(args.out, "ablation", heading, report(curves, names, args.seeds, args.gain), curves)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
