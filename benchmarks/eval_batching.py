"""Held-out evaluation, batched or not: is it repeatable, and which is faster? Evaluates one saved policy greedily on
the same held-out scripts twice per batch size and prints success, evidence seen, format errors and seconds.

    .venv/bin/python benchmarks/eval_batching.py runs/ladder/seed0-evidence0/warmstart --preset cpu-learn

Batched turns run as one left-padded `generate`; which turns meet in a batch depends on thread timing, and a tiny
policy's near-tied logits flip with the padding's last-digit differences, so a batched greedy evaluation need not
repeat itself. Turns generated one at a time always do.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", type=Path, help="a saved policy folder (train-sim's warmstart/ or final/)")
    parser.add_argument("--preset", default="cpu-learn", help="train-sim preset: tasks, held-out seed, limits")
    parser.add_argument("--per-task", type=int, default=20, help="held-out scripts per task kind")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 1])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from agentcvr.components import make_training_perception
    from agentcvr.interfaces import Limits
    from agentcvr.policies.hf_policy import HFPolicy
    from scripts_gen.generate import generate
    from train.config import load_config
    from train.evaluate import evaluate

    cfg = load_config(args.preset)
    scripts = [s for task in cfg.data.tasks for s in generate(task, args.per_task, cfg.data.heldout_seed)]
    table = {s.id: s for s in scripts}
    limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
    policy = HFPolicy(args.policy, temperature=0.0, max_new_tokens=cfg.eval.max_new_tokens)
    print(f"{len(scripts)} held-out episodes of {', '.join(cfg.data.tasks)}, policy {args.policy}")
    print("batch  run  success  seen  format errors/episode  seconds")
    seconds: dict[int, list[float]] = {}
    for size in args.batch_sizes:
        for run in range(args.repeats):
            started = time.perf_counter()
            perception = make_training_perception(cfg, table)
            overall = evaluate(policy, scripts, perception, limits, batch_size=size)["overall"]
            seconds.setdefault(size, []).append(time.perf_counter() - started)
            print(
                f"{size:5d}  {run + 1:3d}  {overall['success']:7.1%}  {overall['evidence_seen']:4.0%}  "
                f"{overall['format_errors']:21.2f}  {seconds[size][-1]:7.1f}",
                flush=True,
            )
    base = args.batch_sizes[0]
    for size in args.batch_sizes[1:]:
        ratio = (sum(seconds[base]) / len(seconds[base])) / (sum(seconds[size]) / len(seconds[size]))
        print(f"batch {size} is {ratio:.2f}x as fast as batch {base} (mean seconds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
