"""Does asking with the options in several orders make the embedded master read better? The answer step alone.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/option_votes.py --n 5                 # scan reports, 1.5B
    .venv/bin/python benchmarks/option_votes.py --n 5 --looks expert --model qwen2.5-coder-0.5b

For every multiple-choice episode (`gen-scripts` seed 11, the master-choice episodes) the reports are what a master
would have read: `scan` = the simulator's answer to a whole-video observe of every video with the question as the
focus (what the default master's first turn gets), `expert` = the scripted expert's targeted looks. The model then
answers the reading prompt of `agentcvr.policies.option_vote` with the options rotated into every order. The first
order's most probable letter is the baseline (the options as given, one question: what the master does without votes),
measured in the same run as the vote (the option of highest mean probability over all orders). Prints accuracy per
task kind, the letters chosen, and seconds per episode.
Results go to `<work>/<looks>_<model>.jsonl`; a rerun resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agentcvr.actions import Listen, Observe  # noqa: E402
from agentcvr.models import DEFAULT_MASTER, ensure_model  # noqa: E402
from agentcvr.policies.expert import plan  # noqa: E402
from agentcvr.policies.json_protocol import LETTER_TASKS  # noqa: E402
from agentcvr.policies.option_vote import vote  # noqa: E402
from agentcvr.tasks import TASK_ORDER  # noqa: E402
from scripts_gen.generate import generate  # noqa: E402
from scripts_gen.schema import Script  # noqa: E402
from simulator.script_sim import ScriptSimulator  # noqa: E402


def reports(script: Script, looks: str, simulator: ScriptSimulator) -> list[str]:
    """What the master would have read before answering, with the headers the loop writes."""
    episode = script.episode()
    if looks == "scan":
        calls = [Observe(video=v.index, start=0, end=v.duration, focus=script.question) for v in episode.videos]
    else:
        calls = [Observe(**v.arguments) if v.tool == "observe" else Listen(**v.arguments) for v in plan(script)]
    texts = []
    for call in calls:
        text = simulator.observe(episode, call) if isinstance(call, Observe) else simulator.listen(episode, call)
        texts.append(f"Result of {call.tool} on video {call.video} [{call.start:g}-{call.end:g} s]:\n{text}")
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/option_votes"))
    parser.add_argument("--n", type=int, default=5, help="episodes per multiple-choice task kind")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--looks", choices=["scan", "expert"], default="scan")
    parser.add_argument("--model", default=DEFAULT_MASTER, help="embedded model name or .gguf path")
    parser.add_argument("--orders", type=int, default=4, help="option orders asked (cyclic shifts)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    from agentcvr.policies.gguf import GGUFPolicy  # llama.cpp only once the arguments are good

    scripts = [s for s in generate("all", args.n, args.seed) if s.task in LETTER_TASKS]
    scripts.sort(key=lambda s: (int(s.id.rsplit("-", 1)[1]), TASK_ORDER.index(s.task)))  # balanced when stopped
    model_name = Path(args.model).stem if args.model.endswith(".gguf") else args.model
    out = args.work / f"{args.looks}_{model_name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    todo = [s for s in scripts if s.id not in done]
    if todo:
        model = Path(args.model) if args.model.endswith(".gguf") else ensure_model(args.model)
        policy = GGUFPolicy(model, threads=args.threads)
        simulator = ScriptSimulator({s.id: s for s in scripts})
        with out.open("a") as sink:
            for script in track(todo, description=f"{len(done)} done before"):
                started = time.perf_counter()
                result = vote(
                    script.episode(), reports(script, args.looks, simulator), policy.letter_probabilities, args.orders
                )
                row = {"id": script.id, "task": script.task, "gold": script.answer, "ballots": result.ballots}
                row["scores"] = [round(p, 4) for p in result.scores]
                row |= {"voted": result.letter, "seconds": time.perf_counter() - started}
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                done[script.id] = row
    rows = [done[s.id] for s in scripts if s.id in done]
    Console().print(votes_table(rows, f"{args.looks} reports, {model_name}, {args.orders} orders"))
    return 0


def votes_table(rows: list[dict], title: str) -> Table:
    """Accuracy of the first order (baseline) and of the vote, per task kind and overall."""
    table = Table(title=title)
    for name in ["task", "n", "as given %", "voted %", "letters as given", "s/episode"]:
        table.add_column(name, justify="left" if name in ("task", "letters as given") else "right")
    tasks = [t for t in TASK_ORDER if any(r["task"] == t for r in rows)]
    for task in [*tasks, "all"]:
        group = [r for r in rows if task in ("all", r["task"])]
        if not group:
            continue
        first = sum(r["ballots"][0] == r["gold"] for r in group)
        voted = sum(r["voted"] == r["gold"] for r in group)
        letters = " ".join(f"{k}{v}" for k, v in sorted(Counter(r["ballots"][0] for r in group).items()))
        table.add_row(
            task,
            str(len(group)),
            f"{100 * first / len(group):.0f}",
            f"{100 * voted / len(group):.0f}",
            letters,
            f"{sum(r['seconds'] for r in group) / len(group):.1f}",
        )
    return table


if __name__ == "__main__":
    raise SystemExit(main())
