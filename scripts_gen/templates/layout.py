"""What the templates share: laying events out on a timeline, cutting clips, lettering options, naming evidence.

Times are laid out in ticks of `step` seconds so that boundaries are round numbers, as human annotations are
(1 s for minutes-long videos, 0.1 s for clips of a few seconds).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentcvr.script import Event, Evidence

LETTERS = "ABCDEF"
NUMBER_WORDS = ["one", "two", "three", "four", "five", "six"]

# A background event: (visual, speech or None), drawn fresh for every gap.
Filler = Callable[[random.Random], tuple[str, str | None]]


@dataclass(frozen=True)
class Beat:
    """A foreground event to place: what is seen (and said) and for how long; `key` names it for evidence."""

    visual: str
    length: float
    speech: str | None = None
    key: str | None = None
    tool: str = "observe"  # "listen" when only the speech tells what matters
    gap: float = 1.0  # relative share of the free time that goes just before this beat (0.1: right after the last)


def lay_out(
    rng: random.Random,
    beats: Sequence[Beat],
    duration: float,
    filler: Filler,
    *,
    step: float = 1.0,
    piece: tuple[float, float] = (4.0, 14.0),
    empty: float = 0.15,
) -> tuple[list[Event], dict[str, Event]]:
    """Events of one video: the beats in order with random gaps between them, the gaps filled with background.

    Returns all events and the placed beats by key. A gap piece stays empty with probability `empty` (nothing
    happens there: the simulator answers "No significant action observed.").
    """
    ticks = int(duration / step + 1e-9)
    lengths = [max(1, round(beat.length / step)) for beat in beats]
    slack = ticks - sum(lengths)
    if slack < 0:
        raise ValueError(f"beats last {sum(lengths) * step:g} s, longer than the video ({duration:g} s)")
    weights = [(rng.random() + 0.05) * (beat.gap if beat else 1.0) for beat in [*beats, None]]
    gaps = [int(slack * w / sum(weights)) for w in weights]
    gaps[-1] += slack - sum(gaps)
    events: list[Event] = []
    keyed: dict[str, Event] = {}
    tick = 0
    lo, hi = max(1, round(piece[0] / step)), max(1, round(piece[1] / step))
    for index, gap in enumerate(gaps):
        end = tick + gap
        while tick < end:
            size = min(rng.randint(lo, hi), end - tick)
            if rng.random() >= empty:
                visual, speech = filler(rng)
                if events and events[-1].visual == visual:  # the same background twice in a row reads oddly
                    visual, speech = filler(rng)
                events.append(_event(tick, tick + size, step, visual, speech))
            tick += size
        if index < len(beats):
            beat = beats[index]
            event = _event(tick, tick + lengths[index], step, beat.visual, beat.speech)
            events.append(event)
            if beat.key is not None:
                keyed[beat.key] = event
            tick += lengths[index]
    return events, keyed


def _event(start: int, end: int, step: float, visual: str, speech: str | None) -> Event:
    return Event(start=round(start * step, 3), end=round(end * step, 3), visual=visual, speech=speech)


def cut(events: Sequence[Event], begin: float, end: float) -> list[Event]:
    """The events of a clip [begin, end] of a longer video, in the clip's own seconds (0 = begin)."""
    clipped = []
    for event in events:
        start, stop = max(event.start, begin), min(event.end, end)
        if stop > start:
            clipped.append(event.model_copy(update={"start": round(start - begin, 3), "end": round(stop - begin, 3)}))
    return clipped


def lettered(options: Sequence[str]) -> list[str]:
    """["x", "y"] -> ["A. x", "B. y"]."""
    return [f"{LETTERS[i]}. {option}" for i, option in enumerate(options)]


def place_correct(rng: random.Random, correct: str, distractors: Sequence[str]) -> tuple[list[str], str]:
    """Shuffle the correct option among the distractors: lettered options and the correct letter (uniform)."""
    options = [correct, *distractors]
    rng.shuffle(options)
    return lettered(options), LETTERS[options.index(correct)]


def evidence(
    video: int, event: Event, focus: str, *, tool: str = "observe", fact: str | None = None, pad: float = 0.0
) -> Evidence:
    """Where a placed event can be found: its own interval (optionally padded), the text the tool will return."""
    text = fact if fact is not None else (event.speech if tool == "listen" else event.visual)
    return Evidence(
        video=video, start=max(0.0, event.start - pad), end=event.end + pad, tool=tool, focus=focus, fact=text or ""
    )


def seconds(value: float) -> str:
    """63.0 -> '63', 12.5 -> '12.5'."""
    return f"{value:g}"
