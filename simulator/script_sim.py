"""The rule-based text simulator: answers observe/listen from a semantic script, in microseconds.

`observe` returns the scripted visual events overlapping the queried interval — at most `max_events`, the most
relevant to the focus prompt, listed in time order with their times clipped to the interval. Relevance is the focus
terms an event shares, each weighted by its rarity in the video (idf: "obj_5", in every line of a drone video, tells
nothing), on stemmed words ("overtakes" matches "overtake"). `listen` returns the
speech lines `[s - e]: text`. Nothing outside the queried video and interval is ever returned.
"""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import snowballstemmer

from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode
from agentcvr.script import Event, Script, VideoScript
from simulator.noise import Noise

NO_VISUAL = "No significant action observed."
NO_SPEECH = "No speech detected."
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of in on at to and or is are was were what which who how does do with for from by".split())


_STEMMERS = threading.local()  # a snowball stemmer keeps its word in itself: two threads on one garble each other


def terms(text: str) -> frozenset[str]:
    """The stemmed content words of a text (thread-safe: GRPO rollouts and eval items run episodes in threads)."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return frozenset(stemmer.stemWords([w for w in _WORD.findall(text.lower()) if w not in _STOP]))


@dataclass(frozen=True)
class _Timeline:
    """Events of one video sorted by end time, so overlap search is two bisections and a short scan."""

    events: tuple[Event, ...]
    ends: tuple[float, ...]
    terms: tuple[frozenset[str], ...]
    idf: dict[str, float]  # log(1 + events / events with the term)
    longest: float  # the longest event, seconds: an event ending at or after end + longest starts after end

    @classmethod
    def of(cls, video: VideoScript) -> _Timeline:
        events = tuple(sorted(video.events, key=lambda e: e.end))
        longest = max((e.end - e.start for e in events), default=0.0)
        event_terms = tuple(terms(e.visual) for e in events)
        counts = Counter(term for found in event_terms for term in found)
        idf = {term: math.log(1 + len(events) / count) for term, count in counts.items()}
        return cls(events, tuple(e.end for e in events), event_terms, idf, longest)

    def relevance(self, index: int, focus: frozenset[str]) -> float:
        # rounded: equal term sets must tie (then the earlier event wins) whatever order the set sums in
        return round(sum(self.idf[term] for term in focus & self.terms[index]), 9)

    def overlapping(self, start: float, end: float) -> list[int]:
        first = bisect_left(self.ends, start + 1e-9)  # events ending at or before start do not overlap
        last = bisect_left(self.ends, end + self.longest + 1e-6, first)  # + 1e-6: float slack, filtered below
        return [i for i in range(first, last) if self.events[i].start < end]


class ScriptSimulator:
    """`Perception` over scripts, looked up by episode id."""

    def __init__(self, scripts: Mapping[str, Script], max_events: int = 8, noise: Noise | None = None):
        self.scripts = scripts
        self.max_events = max_events
        self.noise = noise
        self._timelines: dict[tuple[str, int], _Timeline] = {}

    def _timeline(self, episode: Episode, video: int) -> _Timeline:
        key = (episode.id, video)
        if key not in self._timelines:
            script = self.scripts.get(episode.id)
            if script is None:
                raise KeyError(f"no script for episode {episode.id!r}")
            if not 1 <= video <= len(script.videos):
                raise KeyError(f"unknown video {video}: episode {episode.id!r} has videos 1..{len(script.videos)}")
            self._timelines[key] = _Timeline.of(script.videos[video - 1])
        return self._timelines[key]

    def observe(self, episode: Episode, action: Observe) -> str:
        timeline = self._timeline(episode, action.video)
        hits = timeline.overlapping(action.start, action.end)
        if len(hits) > self.max_events:
            focus = terms(action.focus)
            ranked = sorted(hits, key=lambda i: (-timeline.relevance(i, focus), timeline.events[i].start))
            hits = ranked[: self.max_events]
        events = sorted((timeline.events[i] for i in hits), key=lambda e: (e.start, e.end))
        lines = [(max(e.start, action.start), min(e.end, action.end), e.visual) for e in events]
        if self.noise is not None:
            lines = self.noise.apply(lines, (episode.id, "observe", action.video, action.start, action.end))
        if not lines:
            return NO_VISUAL
        return "\n".join(f"[{s:.1f}s - {e:.1f}s] {text}" for s, e, text in lines)

    def listen(self, episode: Episode, action: Listen) -> str:
        timeline = self._timeline(episode, action.video)
        events = sorted(
            (timeline.events[i] for i in timeline.overlapping(action.start, action.end) if timeline.events[i].speech),
            key=lambda e: (e.start, e.end),
        )
        lines = [(max(e.start, action.start), min(e.end, action.end), e.speech or "") for e in events]
        if self.noise is not None:
            call = (episode.id, "listen", action.video, action.start, action.end)
            lines = self.noise.apply(lines, call, visual=False)
        if not lines:
            return NO_SPEECH
        return "\n".join(f"[{s:.1f} - {e:.1f}]: {text}" for s, e, text in lines)
