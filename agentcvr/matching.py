"""Answers made by matching observed sentences, for the task kinds whose answer is not an option: FSA's segment and
CCQA's comparison.

Nothing here is trained: both compare frozen sentence vectors (the reader's encoder, `agentcvr/sentences.py`) by
cosine, and write the answer from the observed lines themselves, so they can only be as right as the looks were.

- FSA: the video-2 line most like what was seen in video 1's reference segment; its stamp is the answer (of a text
  seen in several looks, the closest look's). The looks that make this work observe the reference segment first,
  then video 2 whole (`agentcvr/policies/scan_teacher.py`), then the matched segment closer while the frames are
  sparse (`agentcvr/policies/refine.py`).
- CCQA: the pairs of lines, one per video, that are most alike without being the same (the same step done two ways),
  each written as one sentence that names both videos, as a comparison is scored: every keyword attributed to its
  own video.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agentcvr.episode import Episode
from agentcvr.reading import Line, reference_segment
from agentcvr.sentences import SentenceEncoder

# CCQA pairing: alike enough to be the same step (below: unrelated lines), not so alike that they are the same line
# or method (above). Chosen on generated episodes of seed 10000, never on a table's seed.
PAIR_LOW, PAIR_HIGH, MAX_PAIRS = 0.5, 0.97, 4


def _unit(vectors: torch.Tensor) -> torch.Tensor:
    return vectors / vectors.norm(dim=-1, keepdim=True).clamp_min(1e-9)


def _seen(lines: Sequence[Line], video: int, finest: bool = False) -> list[Line]:
    """A video's seen (not heard) lines with a stamp, each text once: its first, or with `finest` its shortest stamp
    (a closer look's, `agentcvr/policies/refine.py`)."""
    kept, texts = [], set()
    if finest:
        lines = sorted(lines, key=lambda line: line.span[1] - line.span[0] if line.span else float("inf"))
    for line in lines:
        if line.video == video and not line.heard and line.span is not None and line.text not in texts:
            kept.append(line)
            texts.add(line.text)
    return kept


def matching_segment(episode: Episode, lines: Sequence[Line], encoder: SentenceEncoder) -> str | None:
    """FSA: 'start,end' of the video-2 line closest to what video 1 showed in its reference segment (None when the
    looks hold no line of either)."""
    segment = reference_segment(episode)
    if segment is None:
        return None
    start, end = segment
    reference = [line for line in _seen(lines, 1) if line.span[0] < end and line.span[1] > start]  # type: ignore[index]
    candidates = _seen(lines, 2, finest=True)
    if not reference or not candidates:
        return None
    vectors = _unit(encoder.vectors([" ".join(line.text for line in reference), *(c.text for c in candidates)]))
    best = candidates[int((vectors[1:] @ vectors[0]).argmax())]
    first, last = best.span  # type: ignore[misc]
    return f"{first:g},{last:g}"


def _clause(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:]


def contrasts(episode: Episode, lines: Sequence[Line], encoder: SentenceEncoder) -> str | None:
    """CCQA: up to `MAX_PAIRS` sentences 'In video A, ..., whereas in video B, ...', one per contrasting pair of
    observed lines (None when no pair qualifies)."""
    first, second = _seen(lines, 1), _seen(lines, 2)
    if not first or not second:
        return None
    vectors = _unit(encoder.vectors([line.text for line in first + second]))
    similarity = vectors[: len(first)] @ vectors[len(first) :].T
    pairs: list[tuple[int, int]] = []
    used_first: set[int] = set()
    used_second: set[int] = set()
    for flat in similarity.flatten().argsort(descending=True).tolist():
        i, j = divmod(flat, len(second))
        if i in used_first or j in used_second or not PAIR_LOW <= float(similarity[i, j]) <= PAIR_HIGH:
            continue
        pairs.append((i, j))
        used_first.add(i)
        used_second.add(j)
        if len(pairs) == MAX_PAIRS:
            break
    if not pairs:
        return None
    a, b = ("A", "B") if "video a" in episode.question.lower() else ("1", "2")
    pairs.sort(key=lambda pair: first[pair[0]].time)  # in the order the first video shows them
    return " ".join(
        f"In video {a}, {_clause(first[i].text)}, whereas in video {b}, {_clause(second[j].text)}." for i, j in pairs
    )
