"""`agentcvr report` (and its alias `agentcvr eval report`): re-score saved runs of any kind, nothing is run.

Every run writes the one record type (`eval.record.Record`) and every table reads the one summary
(`eval.summary.summarize`). A file of agent-run records (`run`: scored as they were written) prints the per-task
table of scores, turns and tool calls; a file of CrossVid records (`eval crossvid`, `eval synth`: scored here, official
and strict, from the raw replies) gets the paper's table, a Markdown report and a chart. Lines that are not records
are counted and named. A file without a record fails (exit 2); a run whose every record failed or was dropped fails
(exit 1).

    agentcvr report runs/expert.jsonl runs/random.jsonl
    agentcvr report runs/qwen8b.jsonl --out runs/report.md
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentcvr.terminal import fail, warn
from eval.jsonl import read_records
from eval.record import Record
from eval.summary import Summary, score_table, summarize

console = Console(width=None if sys.stdout.isatty() else 160)  # the paper's 15 columns need the width in logs


def report_command(
    results: Annotated[list[Path], typer.Argument(help="Record JSONL files (`run --out`, `eval crossvid --out`).")],
    out: Annotated[
        Path, typer.Option(help="CrossVid runs: the Markdown report; the PNG chart is written beside it.")
    ] = Path("runs/crossvid-report.md"),
) -> None:
    """Print the score table of saved runs side by side (one column group each): per-task success of `run` records,
    the paper's table (with a Markdown report and chart) of `eval crossvid` records. Skipped lines are counted and
    named; a file with no record fails (exit 2), a run with no scorable item fails (exit 1)."""
    episodes: dict[str, list[Record]] = {}
    crossvid: dict[str, list[Record]] = {}
    for path in results:
        if not path.is_file():
            fail(console, f"record file not found: {path}")
        records, skipped = read_records(path, Record)
        if skipped:
            warn(console, f"{path}: {skipped.describe()}")
        latest = list({record.key: record for record in records}.values())  # a re-run key: its last line
        if not latest:
            fail(console, f"no scorable result in {path}" + (f" ({len(skipped)} line(s) skipped)" if skipped else ""))
        scored_when_run = all(record.official is not None for record in latest)
        (episodes if scored_when_run else crossvid)[path.stem] = latest
    summaries = {name: summarize(records) for name, records in {**episodes, **crossvid}.items()}
    if episodes:
        console.print(score_table({name: summaries[name] for name in episodes}, title="Scores (%)"))
    if crossvid:
        from eval.crossvid.report import write_report

        write_report(crossvid, out, console=console)
    check_scorable(console, summaries)


def check_scorable(console: Console, runs: dict[str, Summary]) -> None:
    """Say what the official scores leave out or count as failed; exit 1 when a run has nothing left to score."""
    empty = []
    for name, summary in runs.items():
        failed, dropped = summary.left_out()
        counted = sum(row.failed for row in summary.rows.values()) - failed
        if failed or dropped:
            warn(
                console,
                f"{name}: {failed + dropped} of {summary.records} record(s) left out of the official scores "
                f"({failed} failed: no reply; {dropped} CCQA judgement(s) dropped)",
            )
        if counted:
            warn(console, f"{name}: {counted} of {summary.records} record(s) failed (no reply) and score 0")
        if not summary.scorable:
            empty.append(name)
    if empty:
        fail(console, f"no scorable item in {', '.join(empty)}: every record failed or was dropped", code=1)
