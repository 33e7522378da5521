"""Sim-to-real fidelity on rendered synthetic episodes: generate, render (resumable), run both ways, print the table.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fidelity.py --n 10 --policy expert      # 10 per task kind
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fidelity.py --n 2 --task BU --policy gguf

Scripts come from `scripts_gen.generate` (seed 0), are rendered at 5 fps into `<work>/rendered` (already rendered
scripts are skipped) and every episode runs with the same policy object against the script simulator (the
baseline, measured in the same run) and against `RealPerception` (CPU describer + Whisper tiny.en). The table gives
the decision overlap, FSA IoU, accuracy both ways and the per-call latency ratio real/sim.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentcvr.interfaces import Limits
from agentcvr.script import write_jsonl
from eval.fidelity import run_fidelity
from eval.runner import RunConfig
from scripts_gen.generate import generate
from scripts_gen.render import RenderConfig, render_scripts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/fidelity"))
    parser.add_argument("--n", type=int, default=10, help="episodes per task kind")
    parser.add_argument("--task", action="append", help="task kinds (repeatable); default all ten")
    parser.add_argument("--policy", default="expert", help="a component name: expert, gguf, ...")
    parser.add_argument("--fps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-turns", type=int, default=20, help="policy turns before a forced answer")
    args = parser.parse_args()
    scripts = args.work / "scripts.jsonl"
    if not scripts.exists():
        write_jsonl(generate("all", args.n, args.seed), scripts)
    render_scripts(scripts, args.work / "rendered", RenderConfig(fps=args.fps), tasks=args.task)
    out = args.work / f"results-{args.policy.replace(':', '_')}"
    limits = Limits(max_turns=args.max_turns)
    resume = RunConfig(concurrency=1, resume=True)  # a second call continues the folder (same settings only)
    run_fidelity(
        args.work / "rendered", args.policy, tasks=args.task, limit=args.n, limits=limits, out_dir=out, config=resume
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
