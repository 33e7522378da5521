"""Runs an agent over episodes (`agentcvr.runner.map_with_progress`): one JSONL line per finished episode, resume by
id, the running success on the progress bar, a score table.

Each line holds the episode id, task, answer, official and strict scores, the whole trace (every score can show the
steps behind it) and the run spec (`agentcvr.spec`). Restarting with the same output file skips the ids already
there, but only under the same spec: a file written with another policy, perception or limits is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentcvr.episode import Episode
from agentcvr.runner import map_with_progress
from agentcvr.spec import RunSpec
from agentcvr.tasks import AGGREGATES, TASK_ORDER, get_task
from agentcvr.trace import EpisodeResult
from eval.record import Record, RecordLog, read_latest, resume

# `agentcvr run`'s records are the one record type, keyed by episode id, with the registry's scores filled in.
ScoredResult = Record


def question_digest(episode: Episode) -> str:
    """What was asked (task, question, options, truth), hashed: generated ids repeat across seeds, questions do not."""
    asked = episode.model_dump(mode="json", include={"task", "question", "options", "answer"})
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:16]


def score(result: EpisodeResult, episode: Episode, spec: RunSpec | None = None) -> ScoredResult:
    """Score an episode result (of the run `spec`) through the registry; a failure (no answer) scores 0 in both."""
    task = get_task(episode.task)
    official, strict = (
        (task.official(result.answer, episode), task.strict(result.answer, episode))
        if result.answer is not None
        else (0.0, 0.0)
    )
    scored = ScoredResult(key=episode.id, task=episode.task, output=result.answer, gold=episode.answer, result=result)
    asked = question_digest(episode)
    return scored.model_copy(update={"official": official, "strict": strict, "spec": spec, "question": asked})


def load_results(path: Path) -> dict[str, ScoredResult]:
    """Finished results by episode id (`eval.record.read_latest`)."""
    return read_latest(path)[0]


def finished(out: Path, spec: RunSpec, episodes: Sequence[Episode]) -> dict[str, ScoredResult]:
    """The results already in `out` under the one resume rule (`eval.record.resume`): same spec, same questions."""
    return resume(out, spec, {episode.id: question_digest(episode) for episode in episodes})


def run_episodes(
    run_one: Callable[[Episode], EpisodeResult],
    episodes: Sequence[Episode],
    spec: RunSpec,
    out: Path | None = None,
    on_result: Callable[[ScoredResult], None] | None = None,
    console: Console | None = None,
) -> list[ScoredResult]:
    """Run every episode not already in `out`, appending each result (with `spec`) as it finishes. Raises
    `SpecMismatch` before running anything when `out` holds records of another spec."""
    done = finished(out, spec, episodes) if out else {}
    log = RecordLog(out) if out else None

    def record(episode: Episode, scored: ScoredResult) -> None:
        if log:
            log.append(scored)
        if on_result:
            on_result(scored)

    try:
        return map_with_progress(
            lambda episode: score(run_one(episode), episode, spec),
            episodes,
            key=lambda episode: episode.id,
            done=done,
            on_result=record,
            describe=lambda results: f"success {100 * sum(r.official or 0.0 for r in results) / len(results):.0f}%",
            console=console,
        )
    finally:
        if log:
            log.close()


def summarize(results: Iterable[ScoredResult]) -> dict[str, dict[str, float]]:
    """Per task kind: n, official and strict score, failures, mean turns, tool calls, valid-action rate."""
    groups: dict[str, list[ScoredResult]] = defaultdict(list)
    for item in results:
        groups[item.task].append(item)
    rows = {}
    for task in sorted(groups, key=lambda t: TASK_ORDER.index(t) if t in TASK_ORDER else len(TASK_ORDER)):
        items = groups[task]
        n = len(items)
        rows[task] = {
            "n": n,
            "official": sum(i.official for i in items) / n,
            "strict": sum(i.strict for i in items) / n,
            "failures": sum(i.result.answer is None for i in items),
            "turns": sum(i.result.turns for i in items) / n,
            "tool_calls": sum(i.result.tool_calls for i in items) / n,
            "valid_actions": sum(i.result.valid_action_rate for i in items) / n,
        }
    for name, members in AGGREGATES.items():
        present = [rows[t]["official"] for t in members if t in rows]
        if present and len(present) == len(members):
            rows[name] = {"official": sum(present) / len(present)}
    return rows


def score_table(columns: dict[str, dict[str, dict[str, float]]], title: str = "Scores") -> Table:
    """A rich table, one row per (task, run): n, success %, mean turns, tool calls, valid-action %, failures."""
    table = Table(title=Text(title))  # run names are file names and policy specs: text, not markup
    for name, justify in [
        ("task", "left"),
        ("run", "left"),
        ("n", "right"),
        ("success %", "right"),
        ("turns", "right"),
        ("calls", "right"),
        ("valid %", "right"),
        ("failed", "right"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    tasks = list(dict.fromkeys(t for rows in columns.values() for t in rows))
    for task in tasks:
        for position, (run, rows) in enumerate(columns.items()):
            if task not in rows:
                continue
            row = rows[task]
            table.add_row(
                task if position == 0 or len(columns) == 1 else "",
                Text(run),
                f"{row['n']:.0f}" if "n" in row else "",
                f"{100 * row['official']:.1f}",
                f"{row['turns']:.1f}" if "turns" in row else "",
                f"{row['tool_calls']:.1f}" if "tool_calls" in row else "",
                f"{100 * row['valid_actions']:.0f}" if "valid_actions" in row else "",
                f"{row['failures']:.0f}" if "failures" in row else "",
                end_section=position == len(columns) - 1 and len(columns) > 1,
            )
    return table
