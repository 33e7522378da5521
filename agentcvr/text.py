"""Text comparison shared by the expert, the held-out evaluation and the fidelity evaluation."""

from __future__ import annotations

import re
from collections.abc import Iterable


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
