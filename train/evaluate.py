"""Held-out simulator evaluation: the real agent loop (`Agent` + `HFPolicy` + `ScriptSimulator`) on scripts generated
with a different seed, per task kind: success (the official CrossVid score), mean turns, tool calls, answered share.

The same function scores the expert on the same scripts, the upper bound the warm start is compared with.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from agentcvr.agent import Agent
from agentcvr.protocols import Limits, Perception, Policy
from agentcvr.tasks import get_task
from agentcvr.trace import EpisodeResult
from scripts_gen.schema import Script


def evaluate(
    policy: Policy,
    scripts: Sequence[Script],
    perception: Perception,
    limits: Limits,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Per-task and overall success/turns/tool calls of `policy` on `scripts`; also the wall time."""
    agent = Agent(policy, perception, limits)
    started = time.perf_counter()
    rows = []
    for done, script in enumerate(scripts, start=1):
        episode = script.episode()
        result = agent.run(episode)
        rows.append((script.task, _score(result, script), result))
        if progress is not None:
            progress(done, len(scripts))
    report = summarize(rows)
    report["seconds"] = time.perf_counter() - started
    return report


def _score(result: EpisodeResult, script: Script) -> float:
    if result.answer is None:
        return 0.0
    return float(get_task(script.task).official(result.answer, script.episode()))


def summarize(rows: list[tuple[str, float, EpisodeResult]]) -> dict:
    by_task: dict[str, list] = defaultdict(list)
    for task, score, result in rows:
        by_task[task].append((score, result))
    tasks = {task: _stats(items) for task, items in sorted(by_task.items())}
    overall = _stats([(score, result) for _, score, result in rows])
    return {"tasks": tasks, "overall": overall}


def _stats(items: list[tuple[float, EpisodeResult]]) -> dict:
    scores = [score for score, _ in items]
    results = [result for _, result in items]
    return {
        "episodes": len(items),
        "success": statistics.fmean(scores) if scores else 0.0,
        "turns": statistics.fmean(r.turns for r in results) if results else 0.0,
        "tool_calls": statistics.fmean(r.tool_calls for r in results) if results else 0.0,
        "answered": statistics.fmean(r.answer is not None for r in results) if results else 0.0,
        "format_errors": statistics.fmean(r.format_errors for r in results) if results else 0.0,
    }


def comparison_table(reports: dict[str, dict]) -> str:
    """A plain-text table: one row per task kind, success / turns / tool calls for each named report."""
    names = list(reports)
    tasks = sorted({task for report in reports.values() for task in report["tasks"]}) + ["overall"]
    header = f"{'task':<8}" + "".join(f"{name + ' success':>20}{'turns':>7}{'calls':>7}" for name in names)
    lines = [header]
    for task in tasks:
        cells = []
        for name in names:
            stats = reports[name]["overall"] if task == "overall" else reports[name]["tasks"].get(task)
            if stats is None:
                cells.append(f"{'-':>20}{'-':>7}{'-':>7}")
            else:
                cells.append(f"{stats['success'] * 100:>19.1f}%{stats['turns']:>7.2f}{stats['tool_calls']:>7.2f}")
        lines.append(f"{task:<8}" + "".join(cells))
    return "\n".join(lines)
