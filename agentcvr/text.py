"""Text comparison shared by the expert, the held-out evaluation and the fidelity evaluation; an observation's
lines; the words the reader and the search compare."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    "a an the of in on at to and or is are was were be what which who how does do did with for from by it its this "
    "that these those as into out when where".split()
)
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


def words(text: str) -> frozenset[str]:
    """A text's words as the reader and the search compare them: lower case, ids such as `obj_5` kept whole, no stop
    words."""
    return frozenset(_WORD.findall(text.lower())) - _STOP
