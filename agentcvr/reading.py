"""What the reader reads: the question, its options, and every look of the conversation under a header naming where
it came from.

The option reader (`agentcvr/reader.py`, trained by `agentcvr train-reader`) scores each option against the
observations the master gathered. It sees the same text in training and at inference, built here from the
conversation, whatever the action format: each look as
`Video 2, seen 40-62 s:` (or `heard`, or `whole video`) followed by the observation with its timestamps written short
(`[40.0s - 42.0s]` -> `[40-42]`), so a small model never has to bind an observation to its call by position.

    text = evidence_text(looks(messages, episode))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcvr.actions import Listen, Observe
from agentcvr.episode import OPTION_LABEL, Episode
from agentcvr.text import words

# Task kinds whose answer is one or more of the listed options: the reader's head answers these. FSA's interval and
# CCQA's free text are matched from the observed sentences (`agentcvr/matching.py`); PSS's order stays the master's.
CHOICE_TASKS = frozenset({"BU", "NC", "CC", "PEA", "PI", "MSR", "MOC"})
MULTI_SELECT_TASKS = frozenset({"BU"})

_HEADER = re.compile(r"^Video (\d+), (?:seen|heard)\b.*:$")  # what `header` writes
_STAMP = re.compile(r"\[(\d+(?:\.\d+)?)s?\s*-\s*(\d+(?:\.\d+)?)s?\]:?")


@dataclass(frozen=True)
class Seen:
    """One look as the reader takes it: which video, how, and what came back."""

    video: int
    heard: bool
    start: float | None
    end: float | None
    observation: str


def seen_from(action: Observe | Listen, observation: str) -> Seen:
    return Seen(action.video, isinstance(action, Listen), action.start, action.end, observation)


def _seconds(value: str) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else f"{number:.1f}"


def compact_stamps(text: str) -> str:
    """`[40.0s - 42.0s]` and `[40.0 - 42.0]:` become `[40-42]`: fewer tokens, the same times."""
    return _STAMP.sub(lambda m: f"[{_seconds(m.group(1))}-{_seconds(m.group(2))}]", text)


def header(look: Seen) -> str:
    how = "heard" if look.heard else "seen"
    if look.start is None and look.end is None:
        return f"Video {look.video}, {how}, whole video:"
    start = _seconds(str(look.start or 0.0))
    end = "end" if look.end is None else _seconds(str(look.end))
    return f"Video {look.video}, {how} {start}-{end} s:"


def evidence_text(seen: Sequence[Seen]) -> str:
    """Every look under its header, in the order they were made."""
    return "\n".join(f"{header(look)}\n{compact_stamps(look.observation.strip())}" for look in seen)


def option_letters(options: Sequence[str]) -> list[str]:
    """Each option's label ('A', 'B', ...), or its position's letter where it has none."""
    letters = []
    for slot, option in enumerate(options):
        label = OPTION_LABEL.match(option)
        letters.append(label.group(1) if label else chr(ord("A") + slot))
    return letters


def reads(episode: Episode) -> bool:
    """Whether the reader answers this episode: a choice task with at least two options, or a matched task (FSA
    with its reference segment, CCQA over two videos)."""
    if episode.task == "FSA":
        return reference_segment(episode) is not None and len(episode.videos) == 2
    if episode.task == "CCQA":
        return len(episode.videos) == 2
    return episode.task in CHOICE_TASKS and len(episode.options) >= 2


_SEGMENT = re.compile(r"(\d+(?:\.\d+)?)\s*s?\s*-\s*(\d+(?:\.\d+)?)")


def reference_segment(episode: Episode) -> tuple[float, float] | None:
    """FSA's reference segment in video 1, as the generator (`"Reference segment in video 1": "280-305 s"`) or the
    CrossVid loader (`"ref_segment": [280, 305]`) puts it in the episode's context."""
    for key, value in episode.context.items():
        if "segment" not in key.lower() or "ref" not in key.lower():
            continue
        if isinstance(value, list | tuple) and len(value) == 2:
            return float(value[0]), float(value[1])
        if isinstance(value, str) and (found := _SEGMENT.search(value)):
            return float(found.group(1)), float(found.group(2))
    return None


def split_looks(text: str) -> list[str]:
    """`evidence_text` cut back into its looks, each its header line and its observation."""
    found: list[str] = []
    for line in text.splitlines():
        if _HEADER.match(line) or not found:
            found.append(line)
        else:
            found[-1] += "\n" + line
    return found


def look_video(look: str) -> int | None:
    """The video a look of `split_looks` came from (None for text before any header)."""
    match = _HEADER.match(look.split("\n", 1)[0])
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Line:
    """One sentence of one look: what the reader embeds, with where and when it was observed."""

    text: str
    video: int
    heard: bool
    time: float  # the middle of its stamp (0 where it has none)
    span: tuple[float, float] | None = field(default=None, compare=False)  # its stamp (None where it has none)


_HOW = re.compile(r"^Video \d+, (seen|heard)")
_SHORT_STAMP = re.compile(r"^\[(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)\]\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# The embedded frame describer's scene line (`agentcvr/perception/describer.py`): where it read text on screen, that
# text is what the scene says; its colours and motion beside it are measurements, not sentences to compare.
_SCREEN_TEXT = re.compile(r'^Text on screen: "([^"]*)".*$')


def _said(line: str) -> str:
    """A line's words as the reader compares them: the on-screen text alone where the describer read some."""
    screen = _SCREEN_TEXT.match(line)
    return screen.group(1) if screen else line


def evidence_lines(text: str) -> list[Line]:
    """`evidence_text` as sentences: a stamped line of several sentences (a multi-view frame lists each object in
    its own) becomes one `Line` per sentence, each keeping the look's video and the line's time."""
    found = []
    for look in split_looks(text):
        video = look_video(look)
        if video is None:
            continue
        head, *body = look.split("\n")
        heard = _HOW.match(head).group(1) == "heard"
        for raw in body:
            stamp = _SHORT_STAMP.match(raw)
            span = (float(stamp.group(1)), float(stamp.group(2))) if stamp else None
            time = (span[0] + span[1]) / 2 if span else 0.0
            for sentence in _SENTENCE_END.split(_said(raw[stamp.end() :] if stamp else raw)):
                if sentence.strip():
                    found.append(Line(sentence.strip(), video, heard, time, span))
    return found


_NAMED = re.compile(r"^\s*Videos?\s+(.*)$", re.IGNORECASE)
_VIDEO_NUMBER = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight)\b", re.IGNORECASE)
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def videos_named(option: str) -> frozenset[int]:
    """The videos an option names ('Videos 3 and 4', 'Video one.'); empty for an option that names none."""
    match = _NAMED.match(option)
    if not match:
        return frozenset()
    numbers = _VIDEO_NUMBER.findall(match.group(1))
    return frozenset(int(n) if n.isdigit() else _NUMBER_WORDS[n.lower()] for n in numbers)


def option_number(option: str) -> float | None:
    """An option that is only a number (a count), as that number."""
    text = option.strip().rstrip(".")
    try:
        return float(text)
    except ValueError:
        return None


ROOT = 6


def roots(text: str) -> frozenset[str]:
    """Words cut to their first `ROOT` letters: 'attaches' meets 'attach' (an option names a step in the imperative, a
    line narrates it)."""
    return frozenset(word[:ROOT] for word in words(text))


def best_line(lines: Sequence[Line], text: str) -> Line | None:
    """The line sharing the most word roots with `text` (the earliest on a tie); None if no line shares one."""
    wanted = roots(text)
    best, most = None, 0
    for line in lines:
        shared = len(wanted & roots(line.text))
        if shared > most:
            best, most = line, shared
    return best
