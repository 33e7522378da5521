"""The rule-based text simulator: answers observe/listen from a semantic script, in microseconds.

`observe` returns the scripted visual events overlapping the queried interval — at most `max_events`, the most
relevant to the focus prompt (`agentcvr.relevance`, term rarities over the whole video), listed in time order with
their times clipped to the interval. `listen` returns the speech lines `[s - e]: text`. Nothing outside the queried
video and interval is ever returned.

`sampling="frames"` makes a look see what the real visual agent sees: only the events on screen at one of the call's
`num_frames` frames (`agentcvr.perception.frames.sample_times`, the real sampler's times). At 16 frames over a
10-minute video a step shorter than ~37 s can fall between frames, as it does on rendered footage. Since session 24
it is what `agentcvr run`'s `sim` perception and `train-sim` use unless told otherwise; this class keeps `"events"`
(every event overlapping the interval, the generous model the simulator began with) as its own default, so the
benchmarks that build it directly print what their pages report.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode
from agentcvr.perception.frames import sample_times
from agentcvr.relevance import most_relevant, rarity, terms
from agentcvr.script import Event, Script, VideoScript
from simulator.noise import Noise

NO_VISUAL = "No significant action observed."
NO_SPEECH = "No speech detected."
Sampling = Literal["events", "frames"]


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
        return cls(events, tuple(e.end for e in events), event_terms, rarity(event_terms), longest)

    def overlapping(self, start: float, end: float) -> list[int]:
        first = bisect_left(self.ends, start + 1e-9)  # events ending at or before start do not overlap
        last = bisect_left(self.ends, end + self.longest + 1e-6, first)  # + 1e-6: float slack, filtered below
        return [i for i in range(first, last) if self.events[i].start < end]


class ScriptSimulator:
    """`Perception` over scripts, looked up by episode id."""

    def __init__(
        self,
        scripts: Mapping[str, Script],
        max_events: int = 8,
        noise: Noise | None = None,
        sampling: Sampling = "events",
    ):
        if sampling not in ("events", "frames"):
            raise ValueError(f"unknown sampling {sampling!r}: use 'events' or 'frames'")
        self.scripts = scripts
        self.max_events = max_events
        self.noise = noise
        self.sampling = sampling
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
        if self.sampling == "frames":
            times = sample_times(action.start, action.end, action.num_frames)
            hits = [i for i in hits if any(timeline.events[i].start <= t < timeline.events[i].end for t in times)]
        hits.sort(key=lambda i: (timeline.events[i].start, timeline.events[i].end))
        kept = most_relevant([timeline.terms[i] for i in hits], action.focus, self.max_events, timeline.idf)
        events = [timeline.events[hits[k]] for k in kept]
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
