"""How should the embedded master pick a multiple-choice option? The answer step alone, on the same episodes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/answer_scoring.py --n 8 --scoring verify    # scan reports, 1.5B
    .venv/bin/python benchmarks/answer_scoring.py --scoring vote --orders 4 --looks expert --model qwen2.5-coder-0.5b

For every multiple-choice episode (`gen-scripts` seed 11, the master-choice episodes) the master's conversation is
built as the loop would hold it at the turn limit: `scan` = the default master's first turn (a whole-video observe of
every video, `scan_turn`) and the simulator's reports; `expert` = the scripted expert's targeted looks and their
reports. Then the forced-answer prompt, and the GGUF master answers with one remedy for small models' letter
preference switched on:
- `vote`: the question asked again with the options in `--orders` cyclic orders, the majority taken (`option_vote`);
- `cloze`: each option's text scored as the reply (`option_scoring`), by mean log-probability per token;
- `verify`: each option judged as a proposed answer, by log P(yes) - log P(no) (`option_scoring`).
The turn's thought keeps the letter the model wrote before the remedy, so one run gives both on the same episodes:
the written letter (the baseline) and the remedy's choice (for cloze and verify also the choice by total score).
Prints accuracy per task kind, the letters chosen and seconds per episode. The answer turns run on the engine
(`eval.runner.run_items`, one thread: llama.cpp has one slot) and go to `<work>/<looks>_<model>_<scoring>.jsonl` as
the one record type (the raw reply as `output`, the run spec: model, looks, remedy, turn limit); a rerun resumes, and
only under the same spec.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.actions import Observe
from agentcvr.engine import in_thread
from agentcvr.interfaces import Limits, Policy
from agentcvr.models import DEFAULT_MASTER, ensure_model
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.policies.expert import plan
from agentcvr.policies.json_protocol import LETTER_TASKS, scan_turn
from agentcvr.prompts import FORCE_ANSWER, initial_messages
from agentcvr.script import Script
from agentcvr.session import FORCED_KEY
from agentcvr.spec import Component, RunSpec
from agentcvr.tasks import TASK_ORDER, get_task
from eval.agent_mode import EpisodeItem, score_episode
from eval.record import Record, read_latest
from eval.runner import Reply, RunConfig, run_items
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator

BALLOTS = re.compile(r"answers over \d+ option orders ([A-Z ]+) -> ([A-Z])")
SCORED = re.compile(r"option \w+ scores (.+) -> ([A-Z]); own answer ([A-Z])")
SCORE = re.compile(r"([A-Z]) (-?[\d.]+)/(\d+)")


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


def decision(thought: str) -> dict:
    """The written letter, the remedy's choice and its scores (cloze/verify) or ballots (vote), from the thought."""
    if found := SCORED.search(thought):
        scores = [[float(value), int(count)] for _, value, count in SCORE.findall(found.group(1))]
        return {"own": found.group(3), "choice": found.group(2), "scores": scores}
    if found := BALLOTS.search(thought):
        ballots = found.group(1).split()
        return {"own": ballots[0], "choice": found.group(2), "ballots": ballots}
    raise ValueError(f"the answer turn's thought names no decision: {thought!r}")


class AnswerTurn:
    """The forced answer turn after the looks, as a predictor: the conversation built, the master asked once."""

    def __init__(self, policy: Policy, scripts: Mapping[str, Script], looks: str, max_turns: int):
        self.policy, self.scripts, self.looks, self.max_turns = policy, scripts, looks, max_turns
        self.simulator = ScriptSimulator(scripts)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="answer")  # one llama.cpp slot

    async def predict(self, item: EpisodeItem) -> Reply:
        return await in_thread(self._pool, lambda: self._answer(self.scripts[item.key]))

    def _answer(self, script: Script) -> Reply:
        messages = conversation(script, self.looks, self.simulator, self.max_turns)
        return Reply(output=self.policy.act(messages, script.episode).content)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


async def grade(item: EpisodeItem, record: Record) -> Record:
    """The remedy's choice scored through the registry (the bar's running score); the raw reply stays the output."""
    chosen = record
    if record.status == "ok":
        chosen = record.model_copy(update={"output": decision(json.loads(record.output or "{}")["thought"])["choice"]})
    scored = score_episode(chosen, item.episode)
    return record.model_copy(update={"official": scored.official, "strict": scored.strict})


def row(record: Record) -> dict:
    """A table row from a record: the gold letter, the decision in the reply's thought, seconds."""
    reply = json.loads(record.output or "{}")
    chosen = decision(reply["thought"])
    return {"id": record.key, "task": record.task, "gold": record.gold, **chosen, "seconds": record.seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/answer_scoring"))
    parser.add_argument("--n", type=int, default=8, help="episodes per multiple-choice task kind")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--looks", choices=["scan", "expert"], default="scan")
    parser.add_argument("--scoring", choices=["vote", "cloze", "verify"], default="verify")
    parser.add_argument("--orders", type=int, default=4, help="option orders asked by the vote (own answer + re-asks)")
    parser.add_argument("--model", default=DEFAULT_MASTER, help="embedded model name or .gguf path")
    parser.add_argument("--max-turns", type=int, default=10, help="turn limit the system prompt states")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--table-only", action="store_true", help="tabulate the episodes already run; run nothing")
    args = parser.parse_args()

    scripts = [s for s in generate("all", args.n, args.seed) if s.task in LETTER_TASKS]
    scripts.sort(key=lambda s: (int(s.id.rsplit("-", 1)[1]), TASK_ORDER.index(s.task)))  # balanced when stopped
    model_name = Path(args.model).stem if args.model.endswith(".gguf") else args.model
    out = args.work / f"{args.looks}_{model_name}_{args.scoring}.jsonl"
    remedy = {"answer_orders": args.orders} if args.scoring == "vote" else {"answer_scoring": args.scoring}
    options = {"model": model_name, "looks": args.looks, **remedy}
    spec = RunSpec(policy=Component(name="answer-turn", options=options), limits=Limits(max_turns=args.max_turns))
    console = Console()
    if args.table_only:
        records = list(read_latest(out)[0].values())
    else:
        from agentcvr.policies.gguf import GGUFPolicy  # llama.cpp only once the arguments are good

        model = Path(args.model) if args.model.endswith(".gguf") else ensure_model(args.model)
        turn = AnswerTurn(
            GGUFPolicy(model, threads=args.threads, **remedy), {s.id: s for s in scripts}, args.looks, args.max_turns
        )
        items = [EpisodeItem(s.episode) for s in scripts]
        config = RunConfig(concurrency=1, retries=1, timeout=None, resume=True)  # a rerun continues the file
        try:
            records = asyncio.run(run_items(items, turn, out, config, spec=spec, grade=grade, console=console))
        finally:
            turn.close()
    failed = [r for r in records if r.status != "ok"]
    if failed:
        console.print(f"{len(failed)} answer turn(s) failed, left out: {failed[0].error}", markup=False)
    title = f"{args.looks} reports, {model_name}: the letter written vs {args.scoring}"
    console.print(scoring_table([row(r) for r in records if r.status == "ok"], title))
    return 0


def by_total(row: dict) -> str | None:
    """The option with the highest total score (no per-token mean); None for a vote."""
    scores = row.get("scores")
    return chr(65 + max(range(len(scores)), key=lambda i: (scores[i][0], -i))) if scores else None


def scoring_table(rows: list[dict], title: str) -> Table:
    """Accuracy of the written letter, the remedy's choice and (cloze/verify) the choice by total score."""
    table = Table(title=title)
    columns = ["task", "n", "letter %", "remedy %", "by total %", "letters written", "letters chosen", "s/episode"]
    for name in columns:
        table.add_column(name, justify="left" if name in ("task", "letters written", "letters chosen") else "right")
    tasks = [t for t in TASK_ORDER if any(r["task"] == t for r in rows)]
    for task in [*tasks, "all"]:
        group = [r for r in rows if task in ("all", r["task"])]
        if not group:
            continue
        table.add_row(
            task,
            str(len(group)),
            _share(group, lambda r: r["own"]),
            _share(group, lambda r: r["choice"]),
            _share(group, by_total) if "scores" in group[0] else "",
            _letters(group, lambda r: r["own"]),
            _letters(group, lambda r: r["choice"]),
            f"{sum(r['seconds'] for r in group) / len(group):.1f}",
        )
    return table


def _share(group: list[dict], choose) -> str:
    return f"{100 * sum(choose(r) == r['gold'] for r in group) / len(group):.0f}"


def _letters(group: list[dict], choose) -> str:
    return " ".join(f"{k}{v}" for k, v in sorted(Counter(choose(r) for r in group).items()))


if __name__ == "__main__":
    raise SystemExit(main())
