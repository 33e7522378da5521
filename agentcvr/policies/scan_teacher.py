"""The fair teacher: its calls depend only on what the policy sees; only its answer comes from the script.

The expert (`expert.py`) looks exactly where the script's evidence is, which no policy can know from the question:
a warm start that imitates it learns calls that land on the evidence in 2-10 % of held-out episodes. This teacher
makes the calls a policy could make: it observes every video whole with no focus, so the visual agent looks for the
question and its options (the simulator ranks a whole video's events by that focus), and the call has nothing to
copy. On task kinds about dialogue it listens to every video first, then looks: that way the choice to listen rests
on the question alone (listening second, a looker trained on simulated looks had to decide it after rendered looks,
whose text it had never seen, and answered rendered movies unheard). On FSA it observes video 1's reference segment
(given in the episode's context), then video 2 whole, again with no focus: the loop then searches for what the
earlier look showed (`Session.perceive`). It then answers the truth only if every evidence fact came back in those
observations, and a random well-formed answer otherwise, as the expert does: the warm start never learns to answer
past what it saw.

With `windows` above 1 the scan observes each video as that many contiguous windows instead of whole: each
look returns at most the simulator's `max_events` lines, so a video's later steps, passes and remarks come back that
a single whole-video look ranks out. The windows depend on the videos' durations only (what the policy sees).

`frames` is how many frames each scan look asks the visual agent for (`Observe.num_frames`). A look sees only what is
on screen at its frames: at 16 over a 10-minute video one frame per ~37 s, and a step shorter than that can fall
between them, on real footage as in the frame-faithful simulator (`simulator.script_sim`, `sampling="frames"`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agentcvr.actions import DEFAULT_FRAMES, MAX_FRAMES
from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.policies.expert import answer_if_seen
from agentcvr.policies.teaching import Call, Look, Protocol, looks, next_calls, write_turn
from agentcvr.reading import reference_segment
from agentcvr.session import forced_turn
from agentcvr.text import facts_found

if TYPE_CHECKING:
    from agentcvr.script import Script

CALL_PREFIX = "scan_"
DIALOGUE_TASKS = frozenset({"NC", "PI"})  # movie tasks: some evidence is only heard
SCAN_THOUGHT = "Scan every video for what the question and its options name."  # the published protocol's thought
MORE_THOUGHT = "Look where the evidence is."


def window_spans(duration: float, count: int) -> list[tuple[float, float]]:
    """`count` contiguous windows covering a video of `duration` seconds (edges from the duration only)."""
    edges = [round(duration * i / count, 1) for i in range(count + 1)]
    return list(zip(edges, edges[1:], strict=False))


def windows_every(duration: float, width: float, shortest: float = 1.0) -> list[tuple[float, float]]:
    """Contiguous windows of `width` seconds from the start, the last ending at the video's end (a last piece
    under `shortest` seconds joins the one before). A small model writes these edges by counting up and copying the
    duration; `window_spans`' edges need a division, which smol-v14 never learned (session 36)."""
    end = round(duration, 1)
    starts = [round(width * i, 1) for i in range(math.ceil(end / width)) if width * i < end - shortest or i == 0]
    edges = [*starts, end]
    return list(zip(edges, edges[1:], strict=False))


class ScanTeacher:
    """`Policy` for script episodes: `ScanTeacher(scripts_by_id)`; scans, then answers; writes its turns in
    `protocol`."""

    def __init__(
        self,
        scripts: Mapping[str, Script],
        seed: int = 0,
        dialogue_tasks: frozenset[str] = DIALOGUE_TASKS,
        protocol: Protocol = "tools",
        windows: int = 1,
        frames: int = DEFAULT_FRAMES,
    ):
        if windows < 1:
            raise ValueError(f"windows must be at least 1, got {windows}")
        if not 1 <= frames <= MAX_FRAMES:
            raise ValueError(f"frames must be 1..{MAX_FRAMES} (the visual agent's cap), got {frames}")
        self.scripts, self.seed, self.dialogue_tasks = scripts, seed, dialogue_tasks
        self.protocol, self.windows, self.frames = protocol, windows, frames

    def turns(self, episode: Episode) -> list[list[Call]]:
        """The looking turns, each a list of (tool, arguments)."""
        videos = [video.index for video in episode.videos]
        segment = reference_segment(episode) if episode.task == "FSA" and len(videos) == 2 else None
        if segment is not None:  # the reference segment, then video 2 searched for what it showed
            return [[("observe", {"video": 1, "start": segment[0], "end": segment[1]})], [("observe", {"video": 2})]]
        scan = [call for v in episode.videos for call in self.scan_calls(v.index, v.duration)]
        if episode.task in self.dialogue_tasks:  # listening first: that choice then rests on the question alone
            return [[("listen", {"video": v}) for v in videos], scan]
        return [scan]

    def scan_calls(self, video: int, duration: float) -> list[Call]:
        """The scan's looks at one video: whole, or `windows` contiguous windows of it, each at `frames`."""
        density = {} if self.frames == DEFAULT_FRAMES else {"num_frames": self.frames}  # the default is not written
        if self.windows == 1:
            return [("observe", {"video": video, **density})]
        spans = window_spans(duration, self.windows)
        return [("observe", {"video": video, "start": a, "end": b, **density}) for a, b in spans]

    def next_turn(self, episode: Episode, made: list[Look]) -> tuple[list[Call], str] | None:
        """The next looking turn's calls and thought after the looks `made` (None: answer now)."""
        upcoming = next_calls(self.turns(episode), len(made))
        return (upcoming, SCAN_THOUGHT) if upcoming else None

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        made = looks(messages, episode)
        if not forced_turn(messages) and (turn := self.next_turn(episode, made)):
            calls, thought = turn
            return write_turn(calls, self.protocol, f"{CALL_PREFIX}{len(made)}", thought=thought)
        answer = [("answer", {"answer": self.answer(messages, episode)})]
        return write_turn(answer, self.protocol, f"{CALL_PREFIX}answer")

    def answer(self, messages: list[dict], episode: Episode) -> str:
        """The truth in its official form if every evidence fact was observed, else a random well-formed answer."""
        script = self.scripts.get(episode.id)
        if script is None:
            raise KeyError(f"no script for episode {episode.id!r}")
        observed = " ".join(look.observation for look in looks(messages, episode))
        seen = all(facts_found([item.fact for item in script.evidence], observed))
        return answer_if_seen(script, episode, seen, self.seed)


class ScanThen(ScanTeacher):
    """The scan's turns, then one more turn of `more(episode, looks so far)` calls (none: it answers at once), then the
    scan teacher's answer: a scan followed by a chosen look, as a benchmark compares plans and a reader's items vary
    what it reads. `thought` is that turn's thought, or a function of the episode and the looks so far that writes
    it."""

    def __init__(
        self,
        scripts: Mapping[str, Script],
        more: Callable[[Episode, list[Look]], list[Call]],
        protocol: Protocol = "tools",
        windows: int = 1,
        thought: str | Callable[[Episode, list[Look]], str] = MORE_THOUGHT,
        frames: int = DEFAULT_FRAMES,
    ):
        super().__init__(scripts, protocol=protocol, windows=windows, frames=frames)
        self.more, self.thought = more, thought

    def next_turn(self, episode: Episode, made: list[Look]) -> tuple[list[Call], str] | None:
        scanned = sum(len(turn) for turn in self.turns(episode))
        if len(made) < scanned:
            return super().next_turn(episode, made)
        if len(made) == scanned and (calls := self.more(episode, made)):
            return calls, self.thought(episode, made) if callable(self.thought) else self.thought
        return None
