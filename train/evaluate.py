"""Held-out simulator evaluation: the real agent loop (`Agent` + `HFPolicy` + `ScriptSimulator`) on scripts generated
with a different seed, per task kind: success (the official CrossVid score), mean turns, tool calls, answered share,
and the share of episodes whose observations held every evidence fact (with the success among those).

The same function scores the expert on the same scripts, the upper bound the warm start is compared with. The
episodes go through the one items path (`eval.runner.run_items`: the engine's threads and progress bar, the agent as
predictor, the registry's scores) and their records through the one summary (`eval.summary`); only the evidence split
is this module's, since it reads the scripts. A policy with `act_batch` (HFPolicy) serves many episodes at once: each
episode runs its own agent loop in a thread, and `agentcvr.batching.TurnBatcher` gathers their pending turns into one
generation batch, so evaluation costs a few batched turns rather than hundreds of single ones, while every episode
still goes through the real loop, parser and simulator.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Mapping, Sequence

from rich.console import Console

from agentcvr.actions import Answer
from agentcvr.agent import Agent
from agentcvr.batching import TurnBatcher
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, Policy, PolicyOutput
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.policies.read_answers import Answerer, ReaderAnswers
from agentcvr.script import Script
from agentcvr.spec import Component, RunSpec
from agentcvr.trace import EpisodeResult
from eval.agent_mode import AgentPredictor, EpisodeItem, grade_episode
from eval.record import Record
from eval.runner import RunConfig, run_items
from eval.summary import TaskRow, row_of, summarize
from train.rewards import evidence_share


class BatchedPolicy:
    """A `Policy` over a batched one (`act_batch`): each turn waits in a `TurnBatcher` for the other live episodes'
    turns, and they are generated together, each episode in its row (`slots`: episode id -> place in the run)."""

    def __init__(self, policy, batcher: TurnBatcher[list[dict], PolicyOutput], slots: Mapping[str, int]):
        self.batcher, self.slots, self.protocol = batcher, slots, policy.protocol

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        self.batcher.bind(self.slots[episode.id])
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
    reader: Answerer | None = None,
) -> dict:
    """Per-task and overall success/turns/tool calls of `policy` on `scripts`; also the wall time. With
    `teacher_looks` (the teacher over the scripts) the teacher makes the tool calls and `policy` only answers. With
    `reader`, the reader answers the choice tasks (`ReaderAnswers`); it wraps the batched policy here, not `policy`
    beforehand, since a wrapped policy has no `act_batch` and would run one episode at a time.

    Each episode is tried once (no retries, no timeout): a policy error is a failed episode scoring 0."""
    started = time.perf_counter()
    batched = hasattr(policy, "act_batch") and batch_size > 1
    threads = min(batch_size, len(scripts)) if batched else 1  # each thread's turn joins the policy's next batch
    batcher = TurnBatcher(policy.act_batch, episodes=len(scripts), threads=threads) if batched else None
    slots = {script.id: slot for slot, script in reversed(list(enumerate(scripts)))}  # an id run twice: its first
    serving = BatchedPolicy(policy, batcher, slots) if batcher is not None else policy
    acting = TeacherLooks(teacher_looks, serving) if teacher_looks is not None else serving
    acting = ReaderAnswers(acting, reader) if reader is not None else acting
    predictor = AgentPredictor(Agent(acting, perception, limits), workers=threads)
    spec = RunSpec(policy=Component(name=type(policy).__name__), limits=limits)  # in memory only: nothing resumes
    config = RunConfig(concurrency=threads, retries=1, timeout=None)
    ended = (lambda _: batcher.finished()) if batcher is not None else None  # the others stop waiting for it
    items = [EpisodeItem(script.episode) for script in scripts]
    try:
        records = asyncio.run(
            run_items(items, predictor, None, config, spec=spec, grade=grade_episode, console=console, on_record=ended)
        )
    finally:
        predictor.close(wait=True)  # no timeout stopped an episode mid-way: every thread ends now
    report = held_out(records, {script.id: script for script in scripts})
    report["episodes"] = {r.key: r.official or 0.0 for r in records}  # two policies' runs pair on these
    report["seconds"] = time.perf_counter() - started
    return report


def held_out(records: Sequence[Record], scripts: Mapping[str, Script]) -> dict:
    """The report's figures: per task kind and overall, the one summary's means (`eval.summary`) beside the
    evidence split, which needs the scripts."""
    rows = summarize(records).rows
    tasks = {task: _figures(rows[task], [r for r in records if r.task == task], scripts) for task in sorted(rows)}
    return {"tasks": tasks, "overall": _figures(row_of(list(records)), records, scripts)}


def _figures(row: TaskRow, records: Sequence[Record], scripts: Mapping[str, Script]) -> dict:
    seen = [evidence_seen(r.result, scripts[r.key]) if r.result is not None else False for r in records]
    when_seen = [r.official or 0.0 for r, saw in zip(records, seen, strict=True) if saw]
    return {
        "episodes": row.n,
        "success": row.official if row.official is not None else 0.0,
        "turns": row.turns or 0.0,
        "tool_calls": row.tool_calls or 0.0,
        "answered": 1.0 - row.unanswered / row.n if row.n else 0.0,
        "format_errors": row.format_errors or 0.0,
        "evidence_seen": statistics.fmean(seen) if seen else 0.0,
        "success_when_seen": statistics.fmean(when_seen) if when_seen else None,
    }


def evidence_seen(result: EpisodeResult, script: Script) -> bool:
    """Whether the episode's observations delivered every evidence fact of the script: tells a policy that does not
    look in the right place (seen rarely) from one that looks but cannot read (seen, yet wrong)."""
    facts = [item.fact for item in script.evidence]
    return not facts or evidence_share(result, facts) == 1.0


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
