"""`agentcvr report` (and its alias `agentcvr eval report`): re-score saved runs of any kind, nothing is run.

Every run writes the one record type (`eval.record.Record`). A file of `agentcvr run` records (scored as they were
written) prints the per-task table of episodes, turns and tool calls; a file of `eval crossvid` records (scored here,
official and strict, from the raw replies) gets the paper's table, a Markdown report and a chart. Lines that are not
records are counted and named. A file without a record fails (exit 2); a CrossVid run whose every record failed or was
dropped fails (exit 1).

    agentcvr report runs/expert.jsonl runs/random.jsonl
    agentcvr report runs/qwen8b.jsonl --out runs/report.md
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentcvr.terminal import fail, warn
from eval.crossvid.cli import check_scorable, console
from eval.jsonl import read_records
from eval.record import Record
from eval.runner import score_table, summarize


def report_command(
    results: Annotated[list[Path], typer.Argument(help="Record JSONL files (`run --out`, `eval crossvid --out`).")],
    out: Annotated[
        Path, typer.Option(help="CrossVid runs: the Markdown report; the PNG chart is written beside it.")
    ] = Path("runs/crossvid-report.md"),
) -> None:
    """Print the score table of saved runs side by side (one column group each): per-task success of `run` records,
    the paper's table (with a Markdown report and chart) of `eval crossvid` records. Skipped lines are counted and
    named; a file with no record fails (exit 2), a CrossVid run with no scorable item fails (exit 1)."""
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
        scored_when_run = all(record.official is not None and record.result is not None for record in latest)
        (episodes if scored_when_run else crossvid)[path.stem] = latest
    if episodes:
        columns = {name: summarize(records) for name, records in episodes.items()}
        console.print(score_table(columns, title="Scores (official, %)"))
    if crossvid:
        from eval.crossvid.report import write_report

        write_report(crossvid, out, console=console)
        check_scorable(crossvid)
