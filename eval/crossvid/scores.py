"""Official and strict CrossVid scores of a run's prediction records, per task and as C/T/M/O.Avg.

official: the official scripts' rules exactly. Raw output, no normalization; BU against the gold letters joined in
stored order; FSA mean IoU with an unparseable reply kept as 0; CCQA pooled over the judge's lists. Failed items
(no reply, or a dropped judgement) leave the denominator; a task with no scored item has no score (the scripts divide
by zero there).
strict: every record counts; failures score 0; answers normalized ("C." / "(C)" / "Answer: C" -> "C", "[82s, 95s]");
CCQA dropped judgements score 0 of 2 x scoring points.

    table = score_run(read_predictions(Path("runs/cv.jsonl")).values())
    table["official"]["FSA"], table["strict"]["O.Avg"]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from agentcvr.episode import Episode, VideoRef
from agentcvr.tasks import AGGREGATES, TASK_ORDER, get_task
from agentcvr.tasks.registry import NOT_JUDGED
from eval.crossvid.judge import parse_judgement, strict_judgement
from eval.crossvid.records import Prediction

MODES = ("official", "strict")


def official_item(record: Prediction) -> tuple[float, float] | None:
    """(score, weight) of one record under the official rules (the registry's, with CrossVid's failure rule), or None
    when the official scripts drop it."""
    judgement = NOT_JUDGED
    if record.task == "CCQA" and record.status == "ok":
        judgement = parse_judgement(record.judge.reply if record.judge else None)
    return get_task(record.task).weighted(
        record.output, _episode(record), failed=record.status != "ok", drop_failures=True, judgement=judgement
    )


def left_out(records: Iterable[Prediction]) -> tuple[int, int]:
    """(failed records, CCQA judgements dropped): what the official rules leave out of the denominator."""
    failed = dropped = 0
    for record in records:
        if official_item(record) is None:
            failed += record.status != "ok"
            dropped += record.status == "ok"
    return failed, dropped


def strict_item(record: Prediction) -> tuple[float, float]:
    """(score, weight) under the strict rules: always counted (a CCQA failure as 0 of 2 x scoring points)."""
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


def score_run(records: Iterable[Prediction]) -> dict[str, dict[str, float | None]]:
    """{"official"|"strict": {task or aggregate: score in [0, 1] or None}, "n": {task: records},
    "failed": {task: failures}, "dropped": {task: items the official rules leave out}}."""
    sums: dict[str, dict[str, list[float]]] = {mode: defaultdict(lambda: [0.0, 0.0]) for mode in MODES}
    counts: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    dropped: dict[str, int] = defaultdict(int)
    for record in records:
        counts[record.task] += 1
        failed[record.task] += record.status != "ok"
        official = official_item(record)
        if official is None:
            dropped[record.task] += 1
        else:
            sums["official"][record.task][0] += official[0]
            sums["official"][record.task][1] += official[1]
        score, weight = strict_item(record)
        sums["strict"][record.task][0] += score
        sums["strict"][record.task][1] += weight
    table: dict[str, dict[str, float | None]] = {}
    for mode in MODES:
        row: dict[str, float | None] = {}
        for task in TASK_ORDER:
            if task in counts:
                total, weight = sums[mode][task]
                row[task] = total / weight if weight else None
        for name, members in AGGREGATES.items():
            values = [row.get(task) for task in members]
            row[name] = None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]
        table[mode] = row
    table["n"] = {task: float(counts[task]) for task in TASK_ORDER if task in counts}
    table["failed"] = {task: float(failed[task]) for task in TASK_ORDER if task in counts}
    table["dropped"] = {task: float(dropped[task]) for task in TASK_ORDER if task in counts}
    return table


def _episode(record: Prediction) -> Episode:
    """A minimal episode carrying the gold answer, for the registry's strict scorers."""
    return Episode(
        id=record.key, task=record.task, question="", videos=[VideoRef(index=1, duration=1.0)], answer=record.gold
    )
