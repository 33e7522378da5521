"""The task registry: one entry per CrossVid task kind, serving evaluation, training and the generator.

Each `TaskSpec` knows its answer format (told to the model), how to normalize an answer, the official scorer, a
stricter normalized scorer, a training reward (dense where that makes sense) and how to draw a random answer.

    >>> TASKS["FSA"].official("76,90", _demo_episode("FSA", [76, 90]))
    1.0
    >>> TASKS["BU"].official("AC", _demo_episode("BU", ["A", "C"]))
    1.0
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentcvr.episode import Episode, VideoRef
from agentcvr.tasks import scoring

# A judge scores a free-form answer: returns (covered, correct) flags, one pair per scoring point.
Judge = Callable[[str, Episode], tuple[list[bool], list[bool]]]

# `TaskSpec.weighted(judgement=...)` default: no LLM judge scored the item (None: its judgement was dropped).
NOT_JUDGED = object()


@dataclass(frozen=True)
class TaskSpec:
    kind: str
    name: str
    dimension: str
    answer_format: str
    normalize: Callable[[str], str | None]
    official_form: Callable[[Any], str]
    dense: Callable[[str, Any], float] | None = None

    def official(self, output: str, episode: Episode, judge: Judge | None = None) -> float:
        """The official CrossVid score of one raw output: string equality, IoU for FSA (read as the official script
        reads it: `split(",")` + `float()`, else 0), a judge for CCQA."""
        if self.kind == "FSA":
            interval = scoring.official_interval(output)
            return scoring.temporal_iou(interval, episode.answer) if interval else 0.0
        if self.kind == "CCQA":
            return _judged(output, episode, judge or keyword_judge)
        return float(output == self.official_form(episode.answer))

    def strict(self, output: str, episode: Episode, judge: Judge | None = None) -> float:
        """Score after normalizing the output (trailing spaces, 'Option B', 'C, A', '[82s, 95s]'...)."""
        if self.kind == "FSA":
            interval = scoring.parse_interval(output)
            return scoring.temporal_iou(interval, episode.answer) if interval else 0.0
        if self.kind == "CCQA":
            return self.official(output, episode, judge)
        normalized = self.normalize(output)
        truth = self.normalize(self.official_form(episode.answer))
        return float(normalized is not None and normalized == truth)

    def weighted(
        self,
        output: str | None,
        episode: Episode,
        *,
        strict: bool = False,
        failed: bool = False,
        drop_failures: bool = False,
        judgement: tuple[float, float] | None | object = NOT_JUDGED,
    ) -> tuple[float, float] | None:
        """(score, weight) of one item for a task's weighted mean, or None when the item leaves the denominator.

        Every evaluation scores through here so that the rules live in one place. `failed`: no reply came (errors
        after retries, a timeout, an item that could not be built). CrossVid's official scripts drop such items
        (`drop_failures=True`, the `eval crossvid` rule); `agentcvr run` scores them 0 (the default); strict never
        drops. A reply without an answer (`output` None) is kept and scores 0. `judgement`: CCQA's pooled (earned,
        possible) points from an LLM judge, None when its reply was unusable (dropped, as the official scorer does);
        without one CCQA is scored by `official`/`strict` with weight 1."""
        if failed and drop_failures and not strict:
            return None
        if self.kind == "CCQA" and judgement is not NOT_JUDGED:
            return judgement if judgement is None else (float(judgement[0]), float(judgement[1]))  # type: ignore[index]
        if failed or output is None:
            return 0.0, 1.0
        if not strict:
            return self.official(output, episode), 1.0  # a 'nan,nan' FSA reply stays NaN, as the official mean has it
        value = self.strict(output, episode)
        return (0.0 if math.isnan(value) else value), 1.0

    def reward(self, output: str, episode: Episode, dense: bool = False) -> float:
        """Training correctness reward: the exact official form by default (for FSA the exact interval, as the paper's
        reward), the dense variant (IoU for FSA, position accuracy for PSS, Jaccard for BU) when asked."""
        if dense and self.dense is not None:
            normalized = self.normalize(output)
            return self.dense(normalized, episode.answer) if normalized is not None else 0.0
        if self.kind == "FSA":
            return float(self.normalize(output) == self.normalize(self.official_form(episode.answer)))
        return self.strict(output, episode)

    def random_answer(self, episode: Episode, rng: random.Random) -> str:
        """A uniformly random well-formed answer: the chance baseline."""
        letters = [chr(ord("A") + i) for i in range(len(episode.options))]
        if self.kind == "BU":
            return "".join(sorted(rng.sample(letters, rng.randint(1, len(letters)))))
        if self.kind == "PSS":
            order = [str(i) for i in range(1, len(episode.videos) + 1)]
            rng.shuffle(order)
            return "->".join(order)
        if self.kind == "FSA":
            duration = episode.videos[-1].duration
            start = rng.uniform(0, duration * 0.9)
            return f"{start:.1f},{rng.uniform(start, duration):.1f}"
        if self.kind == "CCQA":
            return "Both videos show cooking steps."
        return rng.choice(letters)


def keyword_judge(output: str, episode: Episode) -> tuple[list[bool], list[bool]]:
    """Offline CCQA judge for generated episodes.

    A point is covered when all its keywords appear, and correct when each keyword is also attributed to the video
    that owns it, and only to it (`reference["point_videos"]`; a keyword belongs to the last "video A/B" named before it
    in its sentence). An answer far
    longer than the reference covers nothing: listing every method name must not pay.

    >>> ep = _demo_episode("CCQA", "A uses a sieve, whereas B uses a towel.")
    >>> owners = [{"video A": "sieve", "video B": "towel"}]
    >>> ep.reference = {"point_keywords": [["sieve", "towel"]], "point_videos": owners}
    >>> keyword_judge("Video A strains with a sieve; video B wrings a towel.", ep)
    ([True], [True])
    >>> keyword_judge("Video A and video B use a towel and a sieve.", ep)
    ([True], [False])
    """
    text = output.lower()
    points = episode.reference.get("point_keywords", [])
    if len(text.split()) > 2 * len(str(episode.answer).split()) + 20:
        return [False] * len(points), [False] * len(points)
    covered = [all(_find(text, k.lower()) for k in keys) for keys in points]
    owners = episode.reference.get("point_videos")
    if owners is None:
        return covered, covered
    correct = [
        hit
        and all(_owners(text, keyword.lower()) == {_video_key(video)} for video, keyword in owner.items() if keyword)
        for hit, owner in zip(covered, owners, strict=True)
    ]
    return covered, correct


_SENTENCE = re.compile(r"[^.;!?\n]+")
_VIDEO_NAME = re.compile(r"\bvideo\s+([ab12])\b")
_SAME_VIDEO = {"a": "a", "1": "a", "b": "b", "2": "b"}


def _video_key(name: str) -> str | None:
    return _SAME_VIDEO.get(name.lower().removeprefix("video").strip())


def _find(text: str, keyword: str) -> list[int]:
    """Where keyword stands as a word, maybe inflected: "whisk" in "whisking", not in "whiskey"."""
    return [m.start() for m in re.finditer(rf"\b{re.escape(keyword)}(?:s|es|ed|ing)?\b", text)]


def _owners(text: str, keyword: str) -> set[str]:
    """The videos a keyword is attributed to: each occurrence goes to the last "video A/B" named before it."""
    owners = set()
    for sentence in _SENTENCE.findall(text):
        for position in _find(sentence, keyword):
            named = _VIDEO_NAME.findall(sentence[:position])
            owners.add(_SAME_VIDEO[named[-1]] if named else "?")
    return owners


def _judged(output: str, episode: Episode, judge: Judge) -> float:
    covered, correct = judge(output, episode)
    points = len(covered)
    return (sum(covered) + sum(correct)) / (2 * points) if points else 0.0


def _letter_task(kind: str, name: str, dimension: str) -> TaskSpec:
    return TaskSpec(
        kind=kind,
        name=name,
        dimension=dimension,
        answer_format="Answer with the letter of the correct option only, e.g. 'B'.",
        normalize=scoring.normalize_letter,
        official_form=lambda answer: answer if isinstance(answer, str) else "".join(answer),
    )


TASKS: dict[str, TaskSpec] = {
    "BU": TaskSpec(
        kind="BU",
        name="behavioral understanding",
        dimension="Comparative",
        answer_format="One or more options may be correct. Answer with all correct letters joined, e.g. 'AC'.",
        normalize=scoring.normalize_letters,
        official_form=scoring.joined_letters,
        dense=lambda out, truth: scoring.jaccard(out, scoring.joined_letters(truth)),
    ),
    "NC": _letter_task("NC", "narrative comprehension", "Comparative"),
    "CC": _letter_task("CC", "culinary comparison", "Comparative"),
    "PEA": _letter_task("PEA", "procedural error analysis", "Comparative"),
    "PI": _letter_task("PI", "plot inference", "Temporal"),
    "FSA": TaskSpec(
        kind="FSA",
        name="functional step alignment",
        dimension="Temporal",
        answer_format="Answer with the start and end time in video 2 as 'start,end' in seconds, e.g. '12.0,20.5'.",
        normalize=lambda text: None if (iv := scoring.parse_interval(text)) is None else f"{iv[0]:g},{iv[1]:g}",
        official_form=lambda answer: f"{float(answer[0]):g},{float(answer[1]):g}",
        dense=lambda out, truth: scoring.temporal_iou(scoring.parse_interval(out) or (0.0, 0.0), truth),
    ),
    "PSS": TaskSpec(
        kind="PSS",
        name="procedural step sequencing",
        dimension="Temporal",
        answer_format="Answer with the segment numbers in the order they happen, e.g. '3->1->2'.",
        normalize=scoring.normalize_order,
        official_form=str,
        dense=lambda out, truth: scoring.position_accuracy(out, str(truth)),
    ),
    "MSR": _letter_task("MSR", "multi-view spatial reasoning", "Multi-view"),
    "MOC": _letter_task("MOC", "multi-view object counting", "Multi-view"),
    "CCQA": TaskSpec(
        kind="CCQA",
        name="comparative culinary QA",
        dimension="Free-form",
        answer_format="Answer in a few sentences that compare the two videos.",
        normalize=lambda text: text.strip() or None,
        official_form=str,
    ),
}

# Task kinds in CrossVid's table order; aggregates as the paper defines them.
TASK_ORDER = ["BU", "NC", "CC", "PEA", "PI", "FSA", "PSS", "MSR", "MOC", "CCQA"]
AGGREGATES = {
    "C.Avg": ["BU", "NC", "CC", "PEA"],
    "T.Avg": ["PI", "FSA", "PSS"],
    "M.Avg": ["MSR", "MOC"],
    "O.Avg": TASK_ORDER,
}


def get_task(kind: str) -> TaskSpec:
    """The spec of a task kind; an unknown kind fails with the list of valid ones."""
    try:
        return TASKS[kind]
    except KeyError:
        raise KeyError(f"unknown task kind {kind!r}: choose one of {', '.join(TASK_ORDER)}") from None


def _demo_episode(kind: str, answer: Any) -> Episode:
    return Episode(id="demo", task=kind, question="?", videos=[VideoRef(index=1, duration=100.0)], answer=answer)
