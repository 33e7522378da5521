"""How much can looking gain under a reader? Whole episodes in the rule simulator, each answered by the reader, under
look plans from the scan (what the default master and every warm start do) to the expert's (which knows where the
evidence is): the gap between them is all a master's looking (and so GRPO over it) could win.

    # as the default master looks on footage: 128 frames a look, only what is on screen at them
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/looks_headroom.py --scripts runs/seed22.jsonl --per-task 60 \\
        --frames 16 --plan scan --plan scan@16 --plan search --plan scan+expert
    # docs/reader.md's session-19 figures: the simulator's first model (every event in a look's interval)
    ... benchmarks/looks_headroom.py --scripts runs/seed21.jsonl --per-task 20 --sampling events \\
        --reader scan-v1 --reader runs/reader-lex/reader

Look plans (the answer is always the reader's, or the matcher's for CCQA):
- `scan`: every video whole, the movie kinds' videos heard (`ScanTeacher`);
- `scan+listen`: the scan, and every video heard on every kind;
- `scan@N`, `scan@N+listen` (`--frames N`): the same at N frames a look (frames count under the default
  `--sampling frames`; `--sampling events` returns every event in a look's interval, the simulator's first model);
- `scan+zoom`: the scan, then per video the +-15 s around the scan line most like the question and its options
  (a rule that uses only what a master sees);
- `search`: the scan, then the search's turn (`agentcvr/policies/search.py`: PEA's option steps zoomed on where the
  scan saw them, NC's and CCQA's videos in windows; what `reader_looks=search` does);
- `expert`: only the evidence windows, with the script's focus (`ExpertPolicy`);
- `scan+expert`: the scan, then the evidence windows: what a master that scans first and then finds the evidence
  would see.

Printed per kind: success (official scoring) and how often every evidence fact came back; with two or more plans a
master could make, also their best per kind (the plan that scores best on each kind: what a choice that follows the
question's kind can win) and per episode (chosen with hindsight: what any learned choice among them could win at
most). Only the kinds the reader answers are counted (FSA's matcher and PSS, the master's own answer, do not depend on
the reader's looks here).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.actions import MAX_FRAMES
from agentcvr.agent import Agent
from agentcvr.components import DEFAULT_READER
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Policy
from agentcvr.policies.expert import ExpertPolicy, evidence_calls
from agentcvr.policies.read_answers import ReaderAnswers
from agentcvr.policies.scan_teacher import ScanTeacher, ScanThen
from agentcvr.policies.search import search_calls
from agentcvr.policies.teaching import Call
from agentcvr.reader import Reader
from agentcvr.reading import CHOICE_TASKS, evidence_lines, evidence_text, seen_from
from agentcvr.script import Script
from agentcvr.tasks import TASK_ORDER, get_task
from simulator.script_sim import ScriptSimulator
from train.evaluate import evidence_seen

KINDS = [k for k in TASK_ORDER if k in CHOICE_TASKS or k == "CCQA"]
PRIVILEGED = frozenset({"expert", "scan+expert"})  # plans that look where only the script knows
ALL_KINDS = frozenset(TASK_ORDER)


def zoom_calls(reader: Reader, pad: float = 15.0) -> Callable[[Episode, list], list[Call]]:
    """Per video, +-`pad` s around its scan line most like the question and options (sentence vectors)."""

    def more(episode: Episode, made: list) -> list[Call]:
        lines = evidence_lines(evidence_text([seen_from(look.action, look.observation) for look in made]))
        query = reader.encoder.vectors([" ".join([episode.question, *episode.options])])[0]
        calls: list[Call] = []
        for video in episode.videos:
            mine = [line for line in lines if line.video == video.index and not line.heard and line.span]
            if mine:
                best = mine[int((reader.encoder.vectors([line.text for line in mine]) @ query).argmax())]
                start, end = max(0.0, best.span[0] - pad), min(video.duration, best.span[1] + pad)
                calls.append(("observe", {"video": video.index, "start": start, "end": end}))
        return calls

    return more


def plans(table: Mapping[str, Script], reader: Reader, frames: list[int], scan: int) -> dict[str, Policy]:
    """The look plans by name; `scan` is the frames of the scan's looks in every plan that scans first."""
    return {
        "scan": ScanTeacher(table, frames=scan),
        **{f"scan@{n}": ScanTeacher(table, frames=n) for n in frames},
        **{f"scan@{n}+listen": ScanTeacher(table, frames=n, dialogue_tasks=ALL_KINDS) for n in frames},
        "scan+listen": ScanTeacher(table, dialogue_tasks=ALL_KINDS, frames=scan),
        "scan+zoom": ScanThen(table, zoom_calls(reader), frames=scan),
        "search": ScanThen(table, search_calls, frames=scan),
        "expert": ExpertPolicy(table, calls_per_turn=8),
        "scan+expert": ScanThen(table, evidence_calls(table), frames=scan),
    }


def measure(policy: Policy, reader: Reader, scripts: list[Script], sampling: str) -> tuple[dict, dict]:
    table = {s.id: s for s in scripts}
    agent = Agent(ReaderAnswers(policy, reader), ScriptSimulator(table, sampling=sampling), Limits(max_turns=6))
    success: dict[str, list[float]] = defaultdict(list)
    seen: dict[str, list[bool]] = defaultdict(list)
    for script in scripts:
        episode = script.episode
        result = agent.run(episode)
        success[script.task].append(get_task(script.task).strict(result.answer, episode) if result.answer else 0.0)
        seen[script.task].append(evidence_seen(result, script))
    return success, seen


def best_per_kind(visible: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Each kind answered with the visible plan that scores best on it: what a choice that follows the question's kind
    alone can win (a policy can learn it: the kind is in the question)."""
    return {k: max((run[k] for run in visible), key=sum) for k in visible[0]}


def best_per_episode(visible: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Each episode answered with whichever visible plan was right on it, chosen with hindsight: an upper bound that
    harvests luck, not a target."""
    return {k: [max(run[k][i] for run in visible) for i in range(len(visible[0][k]))] for k in visible[0]}


def add_row(table: Table, reader: str, looks: str, success: dict, seen: dict | None) -> None:
    """One row: success % per kind (evidence seen % beside it, where measured) and the mean over the kinds."""
    kinds = [k for k in KINDS if success[k]]
    rates = {k: 100 * sum(success[k]) / len(success[k]) for k in kinds}
    cells = [f"{rates[k]:.0f}" + (f" ({100 * sum(seen[k]) / len(seen[k]):.0f})" if seen else "") for k in kinds]
    mean = sum(rates.values()) / len(rates)
    table.add_row(reader, looks, *cells, f"{mean:.1f}")
    Console(width=200).print(f"{reader} {looks}: {mean:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scripts", type=Path, required=True, help="scripts JSONL (agentcvr gen-scripts)")
    parser.add_argument("--per-task", type=int, default=20, help="the first N scripts of each kind")
    parser.add_argument(
        "--reader", action="append", help="a shipped reader's name or a folder (repeatable; default the deployed one)"
    )
    parser.add_argument("--plan", action="append", help="only these look plans (repeatable)")
    parser.add_argument("--frames", type=int, action="append", default=[], help="add plans scan@N and scan@N+listen")
    parser.add_argument(
        "--scan-frames", type=int, default=MAX_FRAMES, help="frames of the scan's looks (the default master's: 128)"
    )
    parser.add_argument("--sampling", choices=["events", "frames"], default="frames", help="the simulator's sampling")
    args = parser.parse_args()
    if not args.scripts.is_file():
        parser.error(f"no scripts at {args.scripts}: `agentcvr gen-scripts -n 40 --seed 21 --out {args.scripts}`")
    counts: Counter[str] = Counter()
    scripts = []
    for line in args.scripts.open():
        script = Script.model_validate_json(line)
        if script.task in KINDS and counts[script.task] < args.per_task:
            scripts.append(script)
            counts[script.task] += 1
    table = Table(
        title=f"reader success % (evidence seen %) on {len(scripts)} episodes of {args.scripts}, {args.sampling} "
        f"sampling, scan at {args.scan_frames} frames"
    )
    for name in ["reader", "looks", *KINDS, "mean"]:
        table.add_column(name, justify="left" if name in ("reader", "looks") else "right")
    for reader_name in args.reader or [DEFAULT_READER]:
        reader = Reader.load(reader_name)
        visible: list[dict[str, list[float]]] = []  # each plan a master could make: per kind, per episode
        for name, policy in plans({s.id: s for s in scripts}, reader, args.frames, args.scan_frames).items():
            if args.plan and name not in args.plan:
                continue
            success, seen = measure(policy, reader, scripts, args.sampling)
            if name not in PRIVILEGED:
                visible.append(success)
            add_row(table, str(reader_name), name, success, seen)
        if len(visible) > 1:
            add_row(table, str(reader_name), "best visible plan, per kind", best_per_kind(visible), None)
            add_row(table, str(reader_name), "best visible plan, per episode", best_per_episode(visible), None)
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
