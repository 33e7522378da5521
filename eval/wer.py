"""Word error rate with a small English normalizer (case, punctuation, simple number words).

>>> word_error_rate(["It was seven thirty."], ["it was 7.30"])
0.0
>>> word_error_rate(["the cat sat"], ["the bat sat down"])
0.6666666666666666
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBERS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {
    word: str(10 * tens)
    for tens, word in enumerate("_ _ _ thirty forty fifty sixty seventy eighty ninety".split())
    if word != "_"
}


_CONTRACTIONS = [
    (r"\bcan't\b", "can not"),
    (r"\bwon't\b", "will not"),
    (r"n't\b", " not"),
    (r"'re\b", " are"),
    (r"'ve\b", " have"),
    (r"'ll\b", " will"),
    (r"\bi'm\b", "i am"),
]


def normalize(text: str) -> list[str]:
    """Lower-case words without punctuation; common contractions spelled out; number words and digits made
    comparable ('7.30' -> '7 30').

    >>> normalize("Fail again. Fail better!")
    ['fail', 'again', 'fail', 'better']
    >>> normalize("Seven-thirty, it's 7:30")
    ['7', '30', "it's", '7', '30']
    >>> normalize("We're sure you can't") == normalize("we are sure you can not")
    True
    """
    text = text.lower().replace("’", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text)
    text = re.sub(r"[^a-z0-9' ]+", " ", text)
    words = [w.strip("'") for w in text.split()]
    return [_NUMBERS.get(w, w) for w in words if w]


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Word-level Levenshtein distance (substitutions, insertions, deletions).

    >>> edit_distance("a b c".split(), "a c d".split())
    2
    """
    row = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, start=1):
        diagonal, row[0] = row[0], i
        for j, hyp in enumerate(hypothesis, start=1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ref != hyp))
    return row[-1]


def word_error_rate(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Corpus WER: total edits over total reference words."""
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    edits = words = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref, hyp = normalize(reference), normalize(hypothesis)
        edits += edit_distance(ref, hyp)
        words += len(ref)
    return edits / words if words else 0.0
