"""Reports of CrossVid runs: the paper's table layout (10 tasks, C/T/M/O.Avg) with each run's official and strict
rows beside the published ones, in markdown and in the terminal, plus a PNG bar chart of the official scores; every
number comes from the one summary (`eval.summary`).

    write_report({"qwen8b": records, "agent": records2}, Path("runs/report.md"))   # also runs/report.png
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from eval.crossvid.published import COLUMNS, PUBLISHED
from eval.record import Record
from eval.summary import summarize


def _cell(value: float | None) -> str:
    if value is None:
        return "–"
    return "nan" if math.isnan(value) else f"{100 * value:.2f}"


def report_rows(runs: dict[str, list[Record]]) -> list[tuple[str, list[str]]]:
    """(label, cells) per row: each run's official and strict rows, labelled, then n / failed / dropped per task."""
    rows = []
    for name, records in runs.items():
        summary = summarize(records)
        rows.append((f"{name} (official)", [_cell(summary.official.get(c)) for c in COLUMNS]))
        rows.append((f"{name} (strict)", [_cell(summary.strict.get(c)) for c in COLUMNS]))
        counts = [f"{row.n}/{row.failed}/{row.dropped}" if (row := summary.rows.get(c)) else "" for c in COLUMNS]
        rows.append((f"{name} n/failed/dropped", counts))
    return rows


def markdown(runs: dict[str, list[Record]], chart: str | None = None) -> str:
    header = "| Method | " + " | ".join(COLUMNS) + " |\n|---|" + "---:|" * len(COLUMNS) + "\n"
    ours = "".join(f"| {label} | " + " | ".join(cells) + " |\n" for label, cells in report_rows(runs))
    published = "".join(
        f"| {name} (published) | " + " | ".join(f"{row[c]:.2f}" for c in COLUMNS) + " |\n"
        for name, row in PUBLISHED.items()
    )
    notes = (
        "\nScores in %. *official*: the CrossVid scripts' rules exactly (raw output, failures and dropped CCQA "
        "judgements left out of the denominator). *strict*: failures count as wrong, answers normalized. "
        "n/failed/dropped: records, failed calls, items the official rules leave out. Published rows: AgentCVR "
        "paper, Table 1 (Gemini-2.5-Pro's O.Avg is 50.4 in the CrossVid README).\n"
    )
    image = f"\n![official scores]({chart})\n" if chart else ""
    return "# CrossVid results\n\n" + header + ours + published + notes + image


def terminal_table(runs: dict[str, list[Record]]) -> Table:
    table = Table(title="CrossVid (%)")
    table.add_column("run")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for label, cells in report_rows(runs):
        if not label.endswith("dropped"):
            table.add_row(Text(label), *cells)  # run names are file names: text, not markup
    return table


def bar_chart(runs: dict[str, list[Record]], path: Path) -> Path:
    """Grouped bars: official score per task and O.Avg, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = [c for c in COLUMNS if c not in ("C.Avg", "T.Avg", "M.Avg")]
    width = 0.8 / max(1, len(runs))
    figure, axis = plt.subplots(figsize=(12, 4))
    for n, (name, records) in enumerate(runs.items()):
        official = summarize(records).official
        values = [100 * v if (v := official.get(c)) is not None and not math.isnan(v) else 0.0 for c in columns]
        axis.bar([i + n * width for i in range(len(columns))], values, width, label=name)
    axis.set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(columns))], columns)
    axis.set_ylabel("official score (%)")
    axis.set_ylim(0, 100)
    axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")  # outside: bars reach 100
    axis.set_title("CrossVid, official scoring")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def write_report(runs: dict[str, list[Record]], path: Path, console: Console | None = None) -> tuple[Path, Path]:
    """Write the markdown report and its PNG chart (same name, .png), print the table; returns both paths."""
    chart = bar_chart(runs, path.with_suffix(".png"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(runs, chart.name))
    if console is not None:
        console.print(terminal_table(runs))
        console.print(f"report: {path}  chart: {chart}", markup=False)
    return path, chart
