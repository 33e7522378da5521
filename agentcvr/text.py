"""Text comparison shared by the expert, the held-out evaluation and the fidelity evaluation; an observation's lines."""

from __future__ import annotations

import re
from collections.abc import Iterable

_STAMPED = re.compile(r"^\s*\[[^\]]*\]:?\s*(.*)$")  # an observation line under its time stamp


def stamped_lines(observation: str) -> list[str]:
    """The lines of an observation that stand under a time stamp, without it (headers and notes are left out).

    >>> stamped_lines("Result of observe:\\n[0.0s - 2.0s] A dog runs.\\n[3.0 - 4.0]: Hello.")
    ['A dog runs.', 'Hello.']
    """
    return [found.group(1) for line in observation.splitlines() if (found := _STAMPED.match(line))]


def plain_text(text: str) -> str:
    """Lower-case words joined by single spaces: 'Lena, after all' and 'Lena: After all' read the same.

    >>> plain_text('Text on screen: "A dog RUNS."')
    'text on screen a dog runs'
    """
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def facts_found(facts: Iterable[str], text: str) -> list[bool]:
    """For each fact, whether `text` holds it, ignoring case and punctuation (`text` is normalized once).

    >>> facts_found(["A dog runs.", "A cat sleeps."], "[0s - 2s] a DOG runs")
    [True, False]
    """
    plain = plain_text(text)
    return [plain_text(fact) in plain for fact in facts]
