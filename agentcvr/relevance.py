"""Which lines of a look matter to its focus: one ranking for the simulator and the real frame describer.

A look reports at most a few lines (8 by default); when more are on screen, both perceptions keep the ones most
relevant to the focus (the question and its options, when the master gives none). Relevance is the focus terms a line
shares, each weighted by its rarity among the lines it is ranked with (idf: "obj_5", in every line of a drone video,
tells nothing), on stemmed words ("overtakes" matches "overtake"). Ranking both the same way keeps a rendered look's
lines the simulator's lines, so what a policy learned to read in simulation is what it reads on footage.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Sequence

import snowballstemmer

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of in on at to and or is are was were what which who how does do with for from by".split())
_STEMMERS = threading.local()  # a snowball stemmer keeps its word in itself: two threads on one garble each other


def terms(text: str) -> frozenset[str]:
    """The stemmed content words of a text (thread-safe: GRPO rollouts and eval items run episodes in threads)."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return frozenset(stemmer.stemWords([w for w in _WORD.findall(text.lower()) if w not in _STOP]))


def rarity(lines: Sequence[frozenset[str]]) -> dict[str, float]:
    """Each term's weight among `lines` (their terms): log(1 + lines / lines with the term)."""
    counts = Counter(term for found in lines for term in found)
    return {term: math.log(1 + len(lines) / count) for term, count in counts.items()}


def relevance(line: frozenset[str], focus: frozenset[str], weights: dict[str, float]) -> float:
    # rounded: equal term sets must tie (then the earlier line wins) whatever order the set sums in
    return round(sum(weights[term] for term in focus & line), 9)


def most_relevant(
    lines: Sequence[frozenset[str]], focus: str, keep: int, weights: dict[str, float] | None = None
) -> list[int]:
    """The indices of the `keep` lines most relevant to `focus`, earlier first on ties, in their own order.
    `weights`: term rarities over a wider set than `lines` (the simulator weighs over the whole video)."""
    if len(lines) <= keep:
        return list(range(len(lines)))
    wanted, weights = terms(focus), weights if weights is not None else rarity(lines)
    ranked = sorted(range(len(lines)), key=lambda i: (-relevance(lines[i], wanted, weights), i))
    return sorted(ranked[:keep])
