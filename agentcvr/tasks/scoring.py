"""Pure answer parsers, official scorers and dense rewards for the CrossVid answer formats.

Official scorers follow the CrossVid repository's eval scripts: raw string equality (joined letters for
multi-select), temporal IoU for intervals. Normalizers are for the strict variant and for rewards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_LETTER = re.compile(r"\b([A-F])\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:final\s+|correct\s+)?answers?\s*(?:is|are)?\s*[:：]?\s*", re.IGNORECASE)


def joined_letters(answer: str | Sequence[str]) -> str:
    """The official form of a multi-select answer.

    >>> joined_letters(["A", "C"])
    'AC'
    >>> joined_letters("C")
    'C'
    """
    return answer if isinstance(answer, str) else "".join(answer)


def normalize_letter(text: str) -> str | None:
    """The single option letter in an answer, if there is exactly one.

    >>> normalize_letter(" b. The chef ")
    'B'
    >>> normalize_letter("Option C")
    'C'
    >>> normalize_letter("A or B") is None
    True
    """
    text = text.strip()
    if re.fullmatch(r"[A-Fa-f][.)]?", text):
        return text[0].upper()
    match = re.match(r"^\(?([A-Fa-f])[.):]\s", text)
    if match:
        return match.group(1).upper()
    letters = set(_LETTER.findall(text.upper()))
    return letters.pop() if len(letters) == 1 else None


def normalize_letters(text: str) -> str | None:
    """A multi-select answer as sorted unique letters.

    >>> normalize_letters("C, A")
    'AC'
    >>> normalize_letters("ac")
    'AC'
    >>> normalize_letters("The answer is AC.")
    'AC'
    >>> normalize_letters("none") is None
    True
    """
    compact = _PREFIX.sub("", text).strip().strip("()[]'\".").strip().upper()
    if re.fullmatch(r"[A-F]+", compact):
        letters = set(compact)
    else:
        letters = set(_LETTER.findall(compact))
    return "".join(sorted(letters)) or None


def normalize_order(text: str) -> str | None:
    """An ordering answer as 'a->b->c'.

    >>> normalize_order("3 -> 1 ->2")
    '3->1->2'
    >>> normalize_order("3, 1, 2")
    '3->1->2'
    """
    numbers = re.findall(r"\d+", text)
    return "->".join(numbers) if numbers else None


def official_interval(text: str | None) -> tuple[float, float] | None:
    """An interval as the official FSA script reads it: `text.split(",")` must give exactly two Python `float()`s
    (which allow surrounding whitespace, exponents, 'nan' and 'inf'); anything else is None (scored 0).

    >>> official_interval(" 82 , 95\\n")
    (82.0, 95.0)
    >>> official_interval("[82, 95]") is None  # brackets: float() fails
    True
    >>> official_interval("82s,95s") is None
    True
    """
    if not isinstance(text, str):
        return None
    parts = text.split(",")
    if len(parts) != 2:
        return None
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        return None


def parse_interval(text: str) -> tuple[float, float] | None:
    """An interval answer 'start,end' read leniently (brackets, prose, 's' suffixes allowed), or None when
    unparseable: the strict (normalized) reading, not the official one.

    >>> parse_interval("[12.5, 20]")
    (12.5, 20.0)
    >>> parse_interval("12") is None
    True
    """
    numbers = _NUMBER.findall(text)
    if len(numbers) != 2:
        return None
    return float(numbers[0]), float(numbers[1])


def temporal_iou(predicted: tuple[float, float], truth: Sequence[float]) -> float:
    """CrossVid's FSA IoU: intersection / (max end - min start); 0 when that union is exactly 0 (so a 'nan' reply
    gives nan, as in the official script, and makes the task mean nan).

    >>> temporal_iou((0, 10), (5, 15))
    0.3333333333333333
    >>> temporal_iou((0, 10), (20, 30))
    0.0
    """
    s1, e1 = predicted
    s2, e2 = float(truth[0]), float(truth[1])
    intersection = max(0.0, min(e1, e2) - max(s1, s2))
    union = max(e1, e2) - min(s1, s2)
    return 0.0 if union == 0 else intersection / union


def position_accuracy(predicted: str, truth: str) -> float:
    """Share of positions where an ordering matches the truth (a dense PSS reward).

    >>> position_accuracy("1->3->2", "1->2->3")
    0.3333333333333333
    """
    pred, gold = predicted.split("->"), truth.split("->")
    return sum(p == g for p, g in zip(pred, gold, strict=False)) / len(gold)


def jaccard(predicted: str, truth: str) -> float:
    """Overlap of two letter sets (a dense multi-select reward).

    >>> jaccard("AB", "AC")
    0.3333333333333333
    """
    a, b = set(predicted), set(truth)
    return len(a & b) / len(a | b) if a | b else 0.0
