"""Does asking again with the options in other orders make the embedded master answer better? The answer step alone.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/option_votes.py --n 5                 # scan reports, 1.5B
    .venv/bin/python benchmarks/option_votes.py --n 5 --looks expert --model qwen2.5-coder-0.5b

For every multiple-choice episode (`gen-scripts` seed 11, the master-choice episodes) the master's conversation is
built as the loop would have built it up to the turn limit: `scan` = the default master's first turn (a whole-video
observe of every video, `scan_turn`) and the simulator's reports; `expert` = the scripted expert's targeted looks and
their reports. Then the forced-answer prompt, and the GGUF policy answers with `answer_orders` re-asks. Its thought
names every order's answer, so one run gives both the turn's own answer (the baseline: what the master does without
votes) and the majority. Prints accuracy per task kind, the letters the turn chose, and seconds per episode.
Results go to `<work>/<looks>_<model>.jsonl`; a rerun resumes.
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

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agentcvr.actions import Observe  # noqa: E402
from agentcvr.models import DEFAULT_MASTER, ensure_model  # noqa: E402
from agentcvr.parsing import ParseError, parse_turn  # noqa: E402
from agentcvr.policies.expert import plan  # noqa: E402
from agentcvr.policies.json_protocol import LETTER_TASKS, scan_turn  # noqa: E402
from agentcvr.prompts import FORCE_ANSWER, initial_messages  # noqa: E402
from agentcvr.script import Script  # noqa: E402
from agentcvr.session import FORCED_KEY  # noqa: E402
from agentcvr.tasks import TASK_ORDER, get_task  # noqa: E402
from scripts_gen.generate import generate  # noqa: E402
from simulator.script_sim import ScriptSimulator  # noqa: E402

BALLOTS = re.compile(r"answers over \d+ option orders ([A-Z ]+) ->")


def conversation(script: Script, looks: str, simulator: ScriptSimulator, max_turns: int) -> list[dict]:
    """The messages the loop would hold at the turn limit after these looks (JSON protocol)."""
    episode = script.episode
    messages = initial_messages(episode, "json", max_turns)
    if looks == "scan":
        turns = [scan_turn(episode)]
    else:
        turns = [_published(visit.tool, visit.arguments) for visit in plan(script)]
    for content in turns:
        messages.append({"role": "assistant", "content": content})
        turn = parse_turn(content, None, episode)
        assert not isinstance(turn, ParseError), turn
        for call in turn.actions:
            text = simulator.observe(episode, call) if isinstance(call, Observe) else simulator.listen(episode, call)
            header = f"Result of {call.tool} on video {call.video} [{call.start:g}-{call.end:g} s]:"
            messages.append({"role": "user", "content": f"{header}\n{text}"})
    answer_format = get_task(episode.task).answer_format
    return [*messages, {"role": "user", "content": FORCE_ANSWER.format(answer_format=answer_format), FORCED_KEY: True}]


def _published(tool: str, arguments: dict) -> str:
    times = {"start_time": arguments["start"], "end_time": arguments["end"]}
    if tool == "listen":
        return json.dumps(
            {"action": "get_caption", "thought": "listen", "params": {"video_index": arguments["video"], **times}}
        )
    target = {"video_index": arguments["video"], **times}
    params = {"observation_targets": [target], "focus_prompt": arguments["focus"] or "what happens"}
    return json.dumps({"action": "observe", "thought": "look", "params": params})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/option_votes"))
    parser.add_argument("--n", type=int, default=5, help="episodes per multiple-choice task kind")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--looks", choices=["scan", "expert"], default="scan")
    parser.add_argument("--model", default=DEFAULT_MASTER, help="embedded model name or .gguf path")
    parser.add_argument("--orders", type=int, default=4, help="option orders asked (the own answer + re-asks)")
    parser.add_argument("--max-turns", type=int, default=10, help="turn limit the system prompt states")
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
        policy = GGUFPolicy(model, threads=args.threads, answer_orders=args.orders)
        simulator = ScriptSimulator({s.id: s for s in scripts})
        with out.open("a") as sink:
            for script in track(todo, description=f"{len(done)} done before"):
                started = time.perf_counter()
                messages = conversation(script, args.looks, simulator, args.max_turns)
                reply = json.loads(policy.act(messages, script.episode).content or "{}")
                ballots = BALLOTS.search(reply["thought"]).group(1).split()  # type: ignore[union-attr]
                row = {"id": script.id, "task": script.task, "gold": script.answer, "ballots": ballots}
                row |= {"voted": reply["final_answer"], "seconds": time.perf_counter() - started}
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                done[script.id] = row
    rows = [done[s.id] for s in scripts if s.id in done]
    Console().print(votes_table(rows, f"{args.looks} reports, {model_name}, {args.orders} orders"))
    return 0


def votes_table(rows: list[dict], title: str) -> Table:
    """Accuracy of the turn's own answer (baseline) and of the vote, per task kind and overall."""
    table = Table(title=title)
    for name in ["task", "n", "own answer %", "voted %", "own letters", "s/episode"]:
        table.add_column(name, justify="left" if name in ("task", "own letters") else "right")
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
