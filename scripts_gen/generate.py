"""Seeded procedural generation of semantic scripts for the ten CrossVid task kinds.

Every script is drawn from its own `random.Random(f"{seed}:{task}:{i}")`, so a script depends only on (seed, task,
index): generating 10 or 10,000 gives the same first ten, in any order or process.

    python -m scripts_gen.generate --task NC --n 1000 --seed 0 --out data/scripts/nc.jsonl
    python -m scripts_gen.generate --task all --n 100 --out data/scripts/all.jsonl
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path

from agentcvr.script import Script, write_jsonl
from agentcvr.tasks import TASK_ORDER
from scripts_gen.templates import assembly, behavior, cooking, movie, plot, steps, uav

Generator = Callable[[random.Random, str], Script]

GENERATORS: dict[str, Generator] = {
    "BU": behavior.behavioral_understanding,
    "NC": movie.narrative_comprehension,
    "CC": cooking.culinary_comparison,
    "PEA": assembly.procedural_error_analysis,
    "PI": plot.plot_inference,
    "FSA": steps.functional_step_alignment,
    "PSS": steps.procedural_step_sequencing,
    "MSR": uav.spatial_reasoning,
    "MOC": uav.object_counting,
    "CCQA": cooking.comparative_culinary_qa,
}
assert list(GENERATORS) == TASK_ORDER


def generate_one(task: str, index: int, seed: int = 0) -> Script:
    """The script number `index` of a task kind for a seed; its id is e.g. 'NC-000042'."""
    return GENERATORS[task](random.Random(f"{seed}:{task}:{index}"), f"{task}-{index:06d}")


def generate(task: str, n: int, seed: int = 0) -> list[Script]:
    """`n` scripts of one task kind, or `n` of every kind for task 'all' (in CrossVid's task order)."""
    if task != "all" and task not in GENERATORS:
        raise KeyError(f"unknown task kind {task!r}: choose 'all' or one of {', '.join(GENERATORS)}")
    tasks = list(GENERATORS) if task == "all" else [task]
    return [generate_one(kind, index, seed) for kind in tasks for index in range(n)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="all", help=f"'all' or one of {', '.join(GENERATORS)}")
    parser.add_argument("--n", type=int, default=100, help="scripts per task kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    args = parser.parse_args(argv)
    count = write_jsonl(generate(args.task, args.n, args.seed), args.out)
    print(f"wrote {count} scripts to {args.out}")


if __name__ == "__main__":
    main()
