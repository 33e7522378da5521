"""Held-out simulator evaluation: the real agent loop (`Agent` + `HFPolicy` + `ScriptSimulator`) on scripts generated
with a different seed, per task kind: success (the official CrossVid score), mean turns, tool calls, answered share,
and the share of episodes whose observations held every evidence fact (with the success among those).

The same function scores the expert on the same scripts, the upper bound the warm start is compared with. A policy
with `act_batch` (HFPolicy) serves many episodes at once: each episode runs its own agent loop in a thread, and
`agentcvr.batching.TurnBatcher` gathers their pending turns into one generation batch, so evaluation costs a few
batched turns rather than hundreds of single ones, while every episode still goes through the real loop, parser and
simulator.
The threads and the progress bar are `agentcvr.runner.map_with_progress`'s.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Sequence

from rich.console import Console

from agentcvr.actions import Answer
from agentcvr.agent import Agent
from agentcvr.batching import TurnBatcher
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, Policy, PolicyOutput
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.runner import map_with_progress
from agentcvr.script import Script
from agentcvr.tasks import get_task
from agentcvr.trace import EpisodeResult
from train.rewards import evidence_share


class BatchedPolicy:
    """A `Policy` over a batched one (`act_batch`): each turn waits in a `TurnBatcher` for the other live episodes'
    turns, and they are generated together."""

    def __init__(self, policy, batcher: TurnBatcher[list[dict], PolicyOutput]):
        self.batcher, self.protocol = batcher, policy.protocol

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        return self.batcher(messages)


class TeacherLooks:
    """The teacher's tool calls, the policy's answer: success then measures reading apart from looking (the policy
    answers with what the teacher saw in front of it). If the policy calls a tool instead, it keeps the turn. Both
    write the same protocol."""

    def __init__(self, teacher: Policy, policy: Policy):
        if teacher.protocol != policy.protocol:
            raise ValueError(f"the teacher writes {teacher.protocol!r} turns, the policy {policy.protocol!r}")
        self.teacher, self.policy, self.protocol = teacher, policy, policy.protocol

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        planned = self.teacher.act(messages, episode)
        parsed = parse_turn(planned.content, planned.tool_calls, episode)
        if isinstance(parsed, ParseError):
            raise ValueError(f"the teacher wrote an invalid turn for {episode.id}: {parsed}")
        if not isinstance(parsed.actions[0], Answer):
            return planned
        return self.policy.act(messages, episode)


def evaluate(
    policy: Policy,
    scripts: Sequence[Script],
    perception: Perception,
    limits: Limits,
    batch_size: int = 32,
    console: Console | None = None,
    teacher_looks: Policy | None = None,
) -> dict:
    """Per-task and overall success/turns/tool calls of `policy` on `scripts`; also the wall time. With
    `teacher_looks` (the teacher over the scripts) the teacher makes the tool calls and `policy` only answers."""
    started = time.perf_counter()
    batched = hasattr(policy, "act_batch") and batch_size > 1
    threads = min(batch_size, len(scripts)) if batched else 1  # each thread's turn joins the policy's next batch
    batcher = TurnBatcher(policy.act_batch, episodes=len(scripts), threads=threads) if batched else None
    serving = BatchedPolicy(policy, batcher) if batcher is not None else policy
    acting = TeacherLooks(teacher_looks, serving) if teacher_looks is not None else serving
    local = threading.local()

    def run(item: tuple[int, Script]) -> tuple[str, float, EpisodeResult, bool]:
        slot, script = item
        if not hasattr(local, "agent"):  # one compiled loop per worker thread
            local.agent = Agent(acting, perception, limits)
        if batcher is not None:
            batcher.bind(slot)
        try:
            result = local.agent.run(script.episode)
        finally:
            if batcher is not None:
                batcher.finished()
        return script.task, _score(result, script), result, evidence_seen(result, script)

    rows = map_with_progress(
        run,
        list(enumerate(scripts)),
        threads=threads,
        label="held-out episodes",
        describe=lambda done: f"success {100 * statistics.fmean(row[1] for row in done):.0f}%",
        console=console,
    )
    report = summarize(rows)
    report["seconds"] = time.perf_counter() - started
    return report


def _score(result: EpisodeResult, script: Script) -> float:
    if result.answer is None:
        return 0.0
    return float(get_task(script.task).official(result.answer, script.episode))


def evidence_seen(result: EpisodeResult, script: Script) -> bool:
    """Whether the episode's observations delivered every evidence fact of the script: tells a policy that does not
    look in the right place (seen rarely) from one that looks but cannot read (seen, yet wrong)."""
    facts = [item.fact for item in script.evidence]
    return not facts or evidence_share(result, facts) == 1.0


def summarize(rows: list[tuple[str, float, EpisodeResult, bool]]) -> dict:
    by_task: dict[str, list] = defaultdict(list)
    for task, score, result, seen in rows:
        by_task[task].append((score, result, seen))
    tasks = {task: _stats(items) for task, items in sorted(by_task.items())}
    overall = _stats([item for items in by_task.values() for item in items])
    return {"tasks": tasks, "overall": overall}


def _stats(items: list[tuple[float, EpisodeResult, bool]]) -> dict:
    scores = [score for score, _, _ in items]
    results = [result for _, result, _ in items]
    seen = [score for score, _, saw in items if saw]
    return {
        "episodes": len(items),
        "success": statistics.fmean(scores) if scores else 0.0,
        "turns": statistics.fmean(r.turns for r in results) if results else 0.0,
        "tool_calls": statistics.fmean(r.tool_calls for r in results) if results else 0.0,
        "answered": statistics.fmean(r.answer is not None for r in results) if results else 0.0,
        "format_errors": statistics.fmean(r.format_errors for r in results) if results else 0.0,
        "evidence_seen": statistics.fmean(saw for _, _, saw in items) if items else 0.0,
        "success_when_seen": statistics.fmean(seen) if seen else None,
    }


def comparison_table(reports: dict[str, dict]) -> str:
    """A plain-text table: one row per task kind, success / turns / tool calls / evidence seen for each named
    report."""
    names = list(reports)
    tasks = sorted({task for report in reports.values() for task in report["tasks"]}) + ["overall"]
    header = f"{'task':<8}" + "".join(f"{name + ' success':>20}{'turns':>7}{'calls':>7}{'seen':>7}" for name in names)
    lines = [header]
    for task in tasks:
        cells = []
        for name in names:
            stats = reports[name]["overall"] if task == "overall" else reports[name]["tasks"].get(task)
            if stats is None:
                cells.append(f"{'-':>20}{'-':>7}{'-':>7}{'-':>7}")
            else:
                seen = f"{stats['evidence_seen'] * 100:.0f}%" if "evidence_seen" in stats else "-"
                cells.append(
                    f"{stats['success'] * 100:>19.1f}%{stats['turns']:>7.2f}{stats['tool_calls']:>7.2f}{seen:>7}"
                )
        lines.append(f"{task:<8}" + "".join(cells))
    return "\n".join(lines)
