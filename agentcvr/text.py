"""Text comparison shared by the expert and the fidelity evaluation."""

from __future__ import annotations

import re


def plain_text(text: str) -> str:
    """Lower-case words joined by single spaces: 'Lena, after all' and 'Lena: After all' read the same.

    >>> plain_text('Text on screen: "A dog RUNS."')
    'text on screen a dog runs'
    """
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))
