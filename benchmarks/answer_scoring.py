"""Does scoring each option's text make the embedded master answer better than the letter it writes?

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/answer_scoring.py --n 10 --scoring cloze     # scan reports, 1.5B
    .venv/bin/python benchmarks/answer_scoring.py --n 10 --scoring verify --looks expert --model qwen2.5-coder-0.5b

The answer step alone, on the master-choice episodes (`gen-scripts` seed 11, multiple-choice kinds): the conversation
is built as the loop would hold it at the turn limit after `scan` looks (the default master's first turn) or the
`expert`'s targeted looks (`option_votes.conversation`), then the GGUF master answers with `answer_scoring` set
(`agentcvr/policies/option_scoring.py`: `cloze`, each option's text as the reply; `verify`, yes/no per proposed
answer). Its thought keeps its own letter and every option's score, so one run gives, on the same episodes, the letter
it wrote (the baseline) and the scored choice (for cloze also the choice by total rather than mean log-probability).
Results go to `<work>/<looks>_<model>_<scoring>.jsonl`; a rerun resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from option_votes import conversation  # noqa: E402  (benchmarks/ is this script's own folder)
from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agentcvr.models import DEFAULT_MASTER, ensure_model  # noqa: E402
from agentcvr.policies.json_protocol import LETTER_TASKS  # noqa: E402
from agentcvr.tasks import TASK_ORDER  # noqa: E402
from scripts_gen.generate import generate  # noqa: E402
from simulator.script_sim import ScriptSimulator  # noqa: E402

SUMMARY = re.compile(r"option \w+ scores (.+) -> ([A-Z]); own answer ([A-Z])")
SCORE = re.compile(r"([A-Z]) (-?[\d.]+)/(\d+)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/answer_scoring"))
    parser.add_argument("--n", type=int, default=8, help="episodes per multiple-choice task kind")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--looks", choices=["scan", "expert"], default="scan")
    parser.add_argument("--scoring", choices=["cloze", "verify"], default="cloze")
    parser.add_argument("--model", default=DEFAULT_MASTER, help="embedded model name or .gguf path")
    parser.add_argument("--max-turns", type=int, default=10, help="turn limit the system prompt states")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--table-only", action="store_true", help="tabulate the episodes already run; run nothing")
    args = parser.parse_args()

    from agentcvr.policies.gguf import GGUFPolicy  # llama.cpp only once the arguments are good

    scripts = [s for s in generate("all", args.n, args.seed) if s.task in LETTER_TASKS]
    scripts.sort(key=lambda s: (int(s.id.rsplit("-", 1)[1]), TASK_ORDER.index(s.task)))  # balanced when stopped
    model_name = Path(args.model).stem if args.model.endswith(".gguf") else args.model
    out = args.work / f"{args.looks}_{model_name}_{args.scoring}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    todo = [] if args.table_only else [s for s in scripts if s.id not in done]
    if todo:
        model = Path(args.model) if args.model.endswith(".gguf") else ensure_model(args.model)
        policy = GGUFPolicy(model, threads=args.threads, answer_scoring=args.scoring)
        simulator = ScriptSimulator({s.id: s for s in scripts})
        with out.open("a") as sink:
            for script in track(todo, description=f"{len(done)} done before"):
                started = time.perf_counter()
                messages = conversation(script, args.looks, simulator, args.max_turns)
                reply = json.loads(policy.act(messages, script.episode).content or "{}")
                found = SUMMARY.search(reply["thought"])
                if found is None:
                    raise RuntimeError(f"{script.id}: the answer turn was not scored: {reply}")
                scores = [[float(lp), int(n)] for _, lp, n in SCORE.findall(found.group(1))]
                row = {"id": script.id, "task": script.task, "gold": script.answer, "own": found.group(3)}
                row |= {"cloze": found.group(2), "scores": scores, "seconds": time.perf_counter() - started}
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                done[script.id] = row
    rows = [done[s.id] for s in scripts if s.id in done]
    title = f"{args.looks} reports, {model_name}: letter written vs {args.scoring} scoring"
    Console().print(scoring_table(rows, title))
    return 0


def by_total(row: dict) -> str:
    """The option with the highest total log-probability (no length normalization)."""
    return chr(65 + max(range(len(row["scores"])), key=lambda i: (row["scores"][i][0], -i)))


def scoring_table(rows: list[dict], title: str) -> Table:
    """Accuracy of the written letter, the scored choice (mean per token) and the choice by total score."""
    table = Table(title=title)
    columns = ["task", "n", "letter %", "scored %", "by total %", "letters written", "scored letters", "s/episode"]
    for name in columns:
        table.add_column(name, justify="left" if name in ("task", "letters written", "scored letters") else "right")
    tasks = [t for t in TASK_ORDER if any(r["task"] == t for r in rows)]
    for task in [*tasks, "all"]:
        group = [r for r in rows if task in ("all", r["task"])]
        if not group:
            continue

        table.add_row(
            task,
            str(len(group)),
            _share(group, lambda r: r["own"]),
            _share(group, lambda r: r["cloze"]),
            _share(group, by_total),
            _letters(group, lambda r: r["own"]),
            _letters(group, lambda r: r["cloze"]),
            f"{sum(r['seconds'] for r in group) / len(group):.1f}",
        )
    return table


def _share(group: list[dict], choose) -> str:
    return f"{100 * sum(choose(r) == r['gold'] for r in group) / len(group):.0f}"


def _letters(group: list[dict], choose) -> str:
    return " ".join(f"{k}{v}" for k, v in sorted(Counter(choose(r) for r in group).items()))


if __name__ == "__main__":
    raise SystemExit(main())
