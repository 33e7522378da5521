"""The one place records become scores: each record's (score, weight) under the official and strict rules, the
per-task summary every table and report reads, the running score on the progress bar, and the terminal table.

Scores come from the task registry only (`TaskSpec.weighted`). A record scored when it was run (`agentcvr run`
fills `official`/`strict` from the whole episode, a failure counting 0) keeps those scores. Any other record
(`eval crossvid`, `eval synth`) is scored here from its raw output under the CrossVid scripts' rules exactly:
raw output, no normalization; BU against the gold letters joined in stored order; FSA mean IoU with an unparseable
reply kept as 0; CCQA pooled over the judge's lists; failed items (no reply) and dropped judgements leave the
denominator, and a task with no scored item has no score (the scripts divide by zero there). `strict` counts every
record: failures 0, answers normalized, a CCQA failure 0 of 2 x scoring points.

    summary = summarize(read_latest(Path("runs/cv.jsonl"))[0].values())
    summary.official["FSA"], summary.strict["O.Avg"], summary.rows["NC"].failed
    console.print(score_table({"expert": summary}))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import fmean

from rich.table import Table
from rich.text import Text

from agentcvr.episode import Episode, VideoRef
from agentcvr.tasks import AGGREGATES, TASK_ORDER, get_task
from agentcvr.tasks.registry import NOT_JUDGED
from eval.crossvid.judge import parse_judgement, strict_judgement
from eval.record import Record


def official_item(record: Record) -> tuple[float, float] | None:
    """(score, weight) of one record under the official rules, or None when they leave it out of the denominator."""
    if record.official is not None:
        return record.official, 1.0
    judgement = NOT_JUDGED
    if record.task == "CCQA" and record.status == "ok":
        judgement = parse_judgement(record.judge.reply if record.judge else None)
    return get_task(record.task).weighted(
        record.output, _episode(record), failed=record.status != "ok", drop_failures=True, judgement=judgement
    )


def strict_item(record: Record) -> tuple[float, float]:
    """(score, weight) under the strict rules: always counted."""
    if record.strict is not None:
        return record.strict, 1.0
    judgement = NOT_JUDGED
    if record.task == "CCQA":
        judgement = strict_judgement(
            record.judge.reply if record.judge and record.status == "ok" else None, record.points
        )
    scored = get_task(record.task).weighted(
        record.output, _episode(record), strict=True, failed=record.status != "ok", judgement=judgement
    )
    assert scored is not None  # strict never drops
    return scored


@dataclass
class TaskRow:
    """One task kind of one run. `failed`: no reply came; `dropped`: left out of the official denominator (failed
    items included, under CrossVid's rule); `unanswered`: no answer (failed, or a reply without one). The agent's
    means (turns, tool calls, valid-action share, format errors) are over the finished records that carry a trace,
    None without one (a failed record's partial trace is there to read, not to average)."""

    n: int = 0
    failed: int = 0
    dropped: int = 0
    unanswered: int = 0
    official: float | None = None
    strict: float | None = None
    turns: float | None = None
    tool_calls: float | None = None
    valid_actions: float | None = None
    format_errors: float | None = None


@dataclass
class Summary:
    """Per task kind (in CrossVid's order) and the C/T/M/O averages (None unless every member task has a score)."""

    rows: dict[str, TaskRow] = field(default_factory=dict)
    official: dict[str, float | None] = field(default_factory=dict)
    strict: dict[str, float | None] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(row.n for row in self.rows.values())

    @property
    def scorable(self) -> int:
        """Records that count officially and got a reply: a run with none has nothing to report."""
        return sum(row.n - max(row.dropped, row.failed) for row in self.rows.values())

    def left_out(self) -> tuple[int, int]:
        """(failed records the official rules drop, other records they drop: unusable CCQA judgements)."""
        failed = sum(min(row.failed, row.dropped) for row in self.rows.values())
        return failed, sum(row.dropped for row in self.rows.values()) - failed


def summarize(records: Iterable[Record]) -> Summary:
    """The summary of one run's records (one per key)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        groups[record.task].append(record)
    summary = Summary()
    for task in sorted(groups, key=lambda t: TASK_ORDER.index(t) if t in TASK_ORDER else len(TASK_ORDER)):
        summary.rows[task] = row_of(groups[task])
    for mode in ("official", "strict"):
        scores = {task: getattr(row, mode) for task, row in summary.rows.items()}
        for name, members in AGGREGATES.items():
            values = [scores.get(task) for task in members]
            scores[name] = None if any(v is None for v in values) else fmean(values)  # type: ignore[arg-type]
        setattr(summary, mode, scores)
    return summary


def row_of(records: list[Record]) -> TaskRow:
    """One row over `records` (a task kind's; or every kind's at once, held-out evaluation's overall)."""
    official, strict = [0.0, 0.0], [0.0, 0.0]
    row = TaskRow(n=len(records))
    for record in records:
        row.failed += record.status != "ok"
        row.unanswered += record.output is None
        scored = official_item(record)
        if scored is None:
            row.dropped += 1
        else:
            official[0] += scored[0]
            official[1] += scored[1]
        score, weight = strict_item(record)
        strict[0] += score
        strict[1] += weight
    row.official = official[0] / official[1] if official[1] else None
    row.strict = strict[0] / strict[1] if strict[1] else None
    traces = [record.result for record in records if record.result is not None and record.status == "ok"]
    if traces:
        row.turns = fmean(trace.turns for trace in traces)
        row.tool_calls = fmean(trace.tool_calls for trace in traces)
        row.valid_actions = fmean(trace.valid_action_rate for trace in traces)
        row.format_errors = fmean(trace.format_errors for trace in traces)
    return row


class RunningScore:
    """The official score per task so far, updated in O(1) a record (the progress bar's text)."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.failed = 0

    def add(self, record: Record) -> None:
        scored = official_item(record)
        self.failed += record.status != "ok"
        if scored is not None:
            self.sums[record.task][0] += scored[0]
            self.sums[record.task][1] += scored[1]

    def describe(self) -> str:
        parts = [self.title] if self.title else []
        for task in TASK_ORDER:
            total, weight = self.sums.get(task, (0.0, 0.0))
            if weight:
                parts.append(f"{task} {100 * total / weight:.1f}")
        if self.failed:
            parts.append(f"failed {self.failed}")
        return " ".join(parts) or "starting"


def score_table(runs: dict[str, Summary], title: str = "Scores") -> Table:
    """One row per (task, run): n, official and strict %, the agent's means, unanswered and failed counts; then the
    averages that every member task has."""
    table = Table(title=Text(title))  # run names are file names and policy specs: text, not markup
    columns = ["task", "run", "n", "success %", "strict %", "turns", "calls", "valid %", "no answer", "failed"]
    for name in columns:
        table.add_column(name, justify="left" if name in ("task", "run") else "right")
    tasks = list(dict.fromkeys(t for summary in runs.values() for t in summary.rows))
    averages = [name for name in AGGREGATES if any(s.official.get(name) is not None for s in runs.values())]
    for task in [*tasks, *averages]:
        shown = [(run, s) for run, s in runs.items() if task in s.rows or s.official.get(task) is not None]
        for position, (run, summary) in enumerate(shown):
            row = summary.rows.get(task)
            cells = [
                task if position == 0 else "",
                Text(run),
                f"{row.n}" if row else "",
                _percent(summary.official.get(task)),
                _percent(summary.strict.get(task)),
                _number(row.turns if row else None),
                _number(row.tool_calls if row else None),
                _percent(row.valid_actions if row else None, digits=0),
                f"{row.unanswered}" if row else "",
                f"{row.failed}" if row else "",
            ]
            table.add_row(*cells, end_section=position == len(shown) - 1 and len(runs) > 1)
    return table


def _percent(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{100 * value:.{digits}f}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _episode(record: Record) -> Episode:
    """A minimal episode carrying the gold answer, for the registry's scorers."""
    return Episode(
        id=record.key, task=record.task, question="", videos=[VideoRef(index=1, duration=1.0)], answer=record.gold
    )
