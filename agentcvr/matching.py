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
  own video. A line one video shows just as the other does (the chef greeting the camera in both) is no difference
  and pairs with nothing: else such fillers, alike across the videos, took the pairs before the steps did.
- MSR, where a question asks where an object is in one view at a moment another view shows (or at its end): the
  moment's line in the other view (the one sharing the most word roots with the moment), then the asked view's lines
  nearest it in time (within `MOMENT_REACH` seconds) that name the object, or for its end the last line that places
  it; the option whose place those lines say word for word, else the one sharing the most words ("not shown" when
  the view was seen then and none names it). A lane change ("moving from the second lane from the right into the
  leftmost lane") places it in the lane it moves into. None when the looks hold no such moment: the reader reads.
  The option reader pools every line of the scan and cannot tie a moment in one view to a time in another.
- MOC, "How many X ... obj_N ...?": the distinct seen lines that name obj_N and say every word of X that the looks
  ever say about obj_N (a question's "pass" where the lines say "overtakes" is not asked of them), each text once
  (one event seen in both views, or in many frames, is one; a line cut short where an observation reached its length
  limit is the line it begins), and the option nearest that count. None when no line
  names the object: the reader reads. The option reader scores each option's number against pooled lines and is near
  chance at counting (13-28 % even from the evidence windows).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agentcvr.episode import Episode, option_texts
from agentcvr.reading import Line, best_line, option_letters, option_number, reference_segment
from agentcvr.relevance import terms
from agentcvr.sentences import SentenceEncoder
from agentcvr.text import plain_text, words

# CCQA pairing: alike enough to be the same step (below: unrelated lines), not so alike that they are the same line
# or method (above). Chosen on generated episodes of seed 10000, never on a table's seed.
PAIR_LOW, PAIR_HIGH, MAX_PAIRS = 0.5, 0.97, 4
MOMENT_REACH = 2.0  # seconds between the moment's line and the asked view's lines read with it
_ASKED = re.compile(r"\b(obj_\d+) in view ([A-Z])\b")  # the object and view a multi-view question asks about
_MOMENT = re.compile(r"^When (.+?) (?:in )?view ([A-Z])\b")  # the moment it is asked at, and the view showing it
_FINAL = re.compile(r"\bfinal\b", re.IGNORECASE)
_PLACE_WORDS = frozenset({"of", "the", "frame", "in", "lane", "view"})  # every place option says them
_PLACE_PREFIX = re.compile(r"^(?:in|on) the ")  # an option's `In the` / `On the`: the place is what follows
_LANE_CHANGE = re.compile(r"\bmoving from .+? into\b")  # "moving from <lane> into <lane>": the first is left
_COUNTED = re.compile(r"^\s*How many (.+?)\??\s*$", re.IGNORECASE)  # what a counting question counts
_OBJECT = re.compile(r"\bobj_\d+\b")
_COUNT_WORDS = terms("many total")  # "How many ... in total": how it asks, not what


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


def _pairs(
    similarity: torch.Tensor, skip_first: Sequence[bool] = (), skip_second: Sequence[bool] = ()
) -> list[tuple[int, int]]:
    """Up to `MAX_PAIRS` (first, second) line pairs, the most alike first, each line in one pair, none too alike or too
    unlike, none of the lines skipped."""
    used_first = {i for i, skip in enumerate(skip_first) if skip}
    used_second = {j for j, skip in enumerate(skip_second) if skip}
    pairs: list[tuple[int, int]] = []
    for flat in similarity.flatten().argsort(descending=True).tolist():
        i, j = divmod(flat, similarity.shape[1])
        if i in used_first or j in used_second or not PAIR_LOW <= float(similarity[i, j]) <= PAIR_HIGH:
            continue
        pairs.append((i, j))
        used_first.add(i)
        used_second.add(j)
        if len(pairs) == MAX_PAIRS:
            break
    return pairs


def contrasts(episode: Episode, lines: Sequence[Line], encoder: SentenceEncoder) -> str | None:
    """CCQA: up to `MAX_PAIRS` sentences 'In video A, ..., whereas in video B, ...', one per contrasting pair of
    observed lines (None when no pair qualifies)."""
    first, second = _seen(lines, 1), _seen(lines, 2)
    if not first or not second:
        return None
    vectors = _unit(encoder.vectors([line.text for line in first + second]))
    similarity = vectors[: len(first)] @ vectors[len(first) :].T
    # a line either video shows as the other does (the chef greeting the camera in both) is no difference: left out,
    # unless nothing else pairs
    twins = similarity > PAIR_HIGH
    pairs = _pairs(similarity, twins.any(dim=1).tolist(), twins.any(dim=0).tolist()) or _pairs(similarity)
    if not pairs:
        return None
    a, b = ("A", "B") if "video a" in episode.question.lower() else ("1", "2")
    pairs.sort(key=lambda pair: first[pair[0]].time)  # in the order the first video shows them
    return " ".join(
        f"In video {a}, {_clause(first[i].text)}, whereas in video {b}, {_clause(second[j].text)}." for i, j in pairs
    )


@dataclass(frozen=True)
class MultiViewQuestion:
    """What a multi-view question asks: `target` (obj_N) in `video`, at the moment `moment` seen in `moment_video`, or
    at its end (`final`)."""

    target: str
    video: int
    moment: str | None = None
    moment_video: int | None = None
    final: bool = False

    def names_target(self, text: str) -> bool:
        return naming(self.target).search(text) is not None


def naming(target: str) -> re.Pattern[str]:
    """Where a text names `target` (obj_N) in any case: rendered text writes `Obj_1` where it starts a sentence."""
    return re.compile(rf"\b{target}\b", re.IGNORECASE)


def view_video(view: str) -> int:
    """The video a multi-view question's `view A` / `view B` names (A the first)."""
    return ord(view.upper()) - ord("A") + 1


def multi_view_question(question: str) -> MultiViewQuestion | None:
    """The parts of "When obj_1 and obj_3 are side by side in view B, where is obj_5 in view A?" or "What is the final
    driving trajectory of obj_2 in view A?" (None for any other question)."""
    asked = _ASKED.findall(question)
    if not asked:
        return None
    target, view = asked[-1]  # the last: the moment's clause may name objects in views too
    moment = _MOMENT.search(question)
    if moment is not None:
        return MultiViewQuestion(target, view_video(view), moment.group(1), view_video(moment.group(2)))
    return MultiViewQuestion(target, view_video(view), final=_FINAL.search(question) is not None)


def _place_said(text: str) -> str:
    """A line's words about where its object is: a lane change says the lane it moves into."""
    return _LANE_CHANGE.sub("in", text.lower())


def _place_score(option: str, said: Sequence[str]) -> tuple[bool, int]:
    """How well an option's place (`Top right of the frame`, `In the leftmost lane`) matches lines about the object:
    whether one says the place word for word, then the most words it shares with one (a tie between `leftmost lane`
    and `second lane from the right` on a line that says `top right ... leftmost lane` goes to the phrase)."""
    phrase = _PLACE_PREFIX.sub("", plain_text(option))
    wanted = words(option) - _PLACE_WORDS
    says = any(phrase in plain_text(text) for text in said)
    return says, max((len(wanted & words(text)) for text in said), default=0)


def place_at_moment(episode: Episode, lines: Sequence[Line]) -> str | None:
    """MSR: the letter of the option naming where the asked object was at the asked moment (None: the looks hold no
    such moment, or nothing in the asked view then)."""
    asked = multi_view_question(episode.question)
    if asked is None:
        return None
    seen = [line for line in lines if not line.heard and line.span is not None]
    view = [line for line in seen if line.video == asked.video]
    options = option_texts(episode.options)
    placed = [o for o in options if "not shown" not in o.lower()]
    if asked.moment is not None:
        anchor = best_line([line for line in seen if line.video == asked.moment_video], asked.moment)
        if anchor is None:
            return None
        reach = [line for line in view if abs(line.time - anchor.time) <= MOMENT_REACH]
        nearest = min((abs(line.time - anchor.time) for line in reach), default=None)
        near = [line for line in reach if abs(line.time - anchor.time) == nearest]
    elif asked.final:
        mine = [line for line in view if asked.names_target(line.text)]
        places = [line for line in mine if any(_place_score(o, [_place_said(line.text)])[0] for o in placed)]
        near = [max(places or mine, key=lambda line: line.time)] if mine else []
    else:
        return None
    if not near:
        return None
    about = [_place_said(line.text) for line in near if asked.names_target(line.text)]
    scores: list[tuple[bool, int]] = []
    for option in options:
        if option not in placed:
            scores.append((False, 1) if not about else (False, -1))  # the view seen then without the object
        else:
            scores.append(_place_score(option, about))
    best = max(scores)
    if best[1] <= 0:
        return None
    return option_letters(episode.options)[scores.index(best)]


def count_across_views(episode: Episode, lines: Sequence[Line]) -> str | None:
    """MOC: the letter of the option nearest the number of distinct seen lines that say what the question counts
    about its object (None: not a counting question, or no seen line names the object)."""
    asked = _COUNTED.match(episode.question)
    target = _OBJECT.search(episode.question)
    numbers = [option_number(option) for option in option_texts(episode.options)]
    if asked is None or target is None or None in numbers:
        return None
    named = naming(target.group(0))
    about = {plain_text(line.text) for line in lines if not line.heard and named.search(line.text)}  # each event once
    if not about:
        return None
    # an observation cut at its length limit ends mid-sentence: the cut line is the start of one seen whole elsewhere
    about = {text for text in about if not any(other != text and other.startswith(text) for other in about)}
    said = frozenset().union(*(terms(text) for text in about))
    wanted = (terms(_OBJECT.sub(" ", asked.group(1))) - _COUNT_WORDS) & said
    count = sum(wanted <= terms(text) for text in about)
    nearest = min(range(len(numbers)), key=lambda i: (abs(numbers[i] - count), numbers[i]))  # type: ignore[operator]
    return option_letters(episode.options)[nearest]
