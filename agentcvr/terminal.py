"""What the command lines print around user text: an error line and the exit that follows it.

Messages name paths, task kinds, policies and answers that a user, a model or a video wrote, so they are `Text`,
never rich markup (`agentcvr ask "Which video shows [/view]?"` would otherwise crash the printer).
"""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text


def error_text(message: str) -> Text:
    """`error: MESSAGE`, the message shown as written."""
    return Text.assemble(("error:", "bold red"), " ", message)


def warn(console: Console, message: str) -> None:
    """A line the user should not miss (skipped input, items left out), shown as written."""
    console.print(Text(message, style="yellow"))


def fail(console: Console, message: str, code: int = 2) -> NoReturn:
    """Print the error and leave the command with `code` (2: bad input, as click's own usage errors)."""
    console.print(error_text(message))
    raise typer.Exit(code)
