"""Rich rendering of an episode trace for the terminal.

Everything shown here was written by a user, a model or a video (question, calls, observations, answers), so it goes
in as `Text`, never as markup: an on-screen `[/red] EXIT` prints as it reads.
"""

from __future__ import annotations

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agentcvr.episode import Episode
from agentcvr.trace import EpisodeResult


def trace_panel(result: EpisodeResult, episode: Episode, score: float | None = None) -> Panel:
    """One panel per episode: each step's action, observation (first lines) or error, and the outcome."""
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("turn", justify="right", width=4)
    table.add_column("action", ratio=2)
    table.add_column("observation / error", ratio=3)
    for step in result.steps:
        if step.kind == "format_error" or step.kind == "policy_error":
            table.add_row(str(step.turn), Text(step.kind, style="red"), Text(step.error or "", style="red"))
            continue
        args = ", ".join(
            f"{k}={v!r}" if isinstance(v, str) else f"{k}={v:g}" for k, v in step.arguments.items() if k != "num_frames"
        )
        observation = (step.observation or "").splitlines()
        shown = "\n".join(observation[:4]) + (f"\n… (+{len(observation) - 4} lines)" if len(observation) > 4 else "")
        style = "yellow" if step.kind == "tool_error" else ""
        table.add_row(str(step.turn), Text(f"{step.tool}({args})"), Text(shown, style=style))
    if result.answer is not None:
        outcome = Text(f"answer={result.answer!r}")
    else:
        outcome = Text(f"failure={result.failure}", style="red")
    truth = episode.answer if not isinstance(episode.answer, str) or len(episode.answer) < 60 else "…"
    scored = f"  score={score:.2f}" if score is not None else ""
    title = Text(f"{episode.id} [{episode.task}] {episode.question[:90]}")
    subtitle = Text.assemble(outcome, f"  truth={truth!r}{scored}  turns={result.turns}")
    return Panel(table, title=title, subtitle=subtitle)
