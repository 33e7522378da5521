"""The search: one more turn of looks after the scan, chosen only from the question, its options and what the scan
showed (never the script), where a second look measurably reads better than the scan alone.

- PEA ("Video 3: attach the sound module and the chassis"): per option, the scan line of the named video (every
  video where it names none) that shares the most words with the option's step, observed again over its own stamp
  with the step as the focus. The reader then sees the step alone rather than among the video's other seven lines.
- NC, CCQA and MOC: each video observed again in contiguous windows (NC 3, CCQA 5; MOC every 30 seconds), the
  question as the focus. A whole-video look returns at most the simulator's eight lines: NC's plot point, CCQA's steps
  and MOC's counted events (up to seven, beside the object's own places) are often ranked out of it. MOC's windows
  (session 25) were chosen on seed 22 among 2, 3, 4 and 6 a video and checked on seed 23: the counting matcher right
  on 77 -> 87 % and 67 -> 78 % of the episodes. Since session 36 they are 30 seconds wide, from the start, the last
  one ending at the video's end: smol-v14, imitating the quarters, wrote four 15-second windows over 0-60 s on 6 of 10
  forced searches whatever the video's length (60-120 s), since a quarter's edges need a division; windows counted up
  in steps of 30 need none. They count about as well (seeds 22, 46, 47, 49, 60 a seed: MOC right 87, 83, 82, 77 %
  against the quarters' 87, 82, 85, 80; 20-second windows counted better, 92, 88, 83, 80, but their longer
  observations put 17 of 90 MOC search trajectories past the warm start's 6,656 tokens).
- MSR (session 24): where the question asks where an object is in one view at a moment another view shows, the asked
  view around the stamp of the other view's scan line most like the moment (`MOMENT_PAD` either side), the object as
  the focus; where it asks for the object's final place, the asked view from the object's last scan line to the end.
  `agentcvr/matching.py` then reads the place from those lines.

The PEA, NC and CCQA looks were chosen on one seed and measured on three more (`benchmarks/looks_headroom.py --plan
search`, docs/reader.md): about one point over the scan on fresh episodes, CCQA the only kind that gained every time.
MSR's moment look, with the matcher, takes MSR from 50 to 82 % on a fresh seed (45), and with it `reader_looks=search`
is the embedded master's default since session 24 (+3.8 points paired over the scan at seed 44; docs/master_choice.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence

from agentcvr.episode import Episode
from agentcvr.matching import multi_view_question
from agentcvr.policies.scan_teacher import ScanThen, window_spans, windows_every
from agentcvr.policies.teaching import Call, Look, Protocol
from agentcvr.reading import Line, best_line, evidence_lines, evidence_text, seen_from
from agentcvr.script import Script

ZOOM_TASKS = frozenset({"PEA"})
MOMENT_TASKS = frozenset({"MSR"})
MOMENT_PAD = 4.0  # seconds either side of the moment's line: the asked view's lines at that time
WINDOWS = {"NC": 3, "CCQA": 5}  # windows a video
WINDOW_SECONDS = {"MOC": 30.0}  # windows this wide from the start
# The search turn's thought restates the question, then names the plan its kind takes: a warm start imitating this
# teacher (smol-v11) mixed MSR's and MOC's plans up on half its searches, the question that tells them apart standing
# thousands of tokens back, behind the scan's observations.
THOUGHT_QUESTION_CHARS = 160  # a longer question is cut at a word
_LETTER = re.compile(r"^\s*[A-Z][.)]\s*")
_VIDEO = re.compile(r"\bvideo\s*(\d+)\b", re.IGNORECASE)


def option_step(option: str) -> tuple[list[int], str]:
    """The videos an option names and its text without them: `B. Video 2: Detach the roof` -> ([2], 'Detach the
    roof')."""
    body = _LETTER.sub("", option)
    videos = [int(found) for found in _VIDEO.findall(body)]
    return videos, _VIDEO.sub("", body).strip(" :,.;")


def zoom_calls(episode: Episode, lines: Sequence[Line]) -> list[Call]:
    """Per option naming a step: its video's best line for the step, observed over its stamp with the step as focus."""
    calls: list[Call] = []
    for option in episode.options:
        videos, step = option_step(option)
        for video in videos or [v.index for v in episode.videos]:
            line = best_line([line for line in lines if line.video == video and line.span], step) if step else None
            if line is not None:
                start, end = line.span
                calls.append(("observe", {"video": video, "start": start, "end": end, "focus": step}))
    return calls


def window_calls(episode: Episode) -> list[Call]:
    """Every video in contiguous windows (edges from the durations only: the kind's count of them, or its width),
    the question as focus."""
    calls: list[Call] = []
    for video in episode.videos:
        if episode.task in WINDOW_SECONDS:
            spans = windows_every(video.duration, WINDOW_SECONDS[episode.task])
        else:
            spans = window_spans(video.duration, WINDOWS[episode.task])
        for start, end in spans:
            calls.append(("observe", {"video": video.index, "start": start, "end": end, "focus": episode.question}))
    return calls


def moment_line(episode: Episode, lines: Sequence[Line]) -> Line | None:
    """MSR: the scan line of the moment's view most like the moment the question names (None: no such question or
    line)."""
    asked = multi_view_question(episode.question)
    if asked is None or asked.moment is None:
        return None
    return best_line([ln for ln in lines if ln.video == asked.moment_video and ln.span], asked.moment)


def moment_calls(episode: Episode, lines: Sequence[Line], pad: float = MOMENT_PAD) -> list[Call]:
    """MSR: where a question asks about one view at a moment another view shows ("When obj_1 and obj_3 are side by side
    in view B, where is obj_5 in view A?"), the scan line of the moment's view most like the moment, and the asked view
    observed around its stamp with the asked object as the focus; where it asks for an object's final place ("final
    ... of obj_2 in view A"), the asked view from that object's last scan line to its end."""
    asked = multi_view_question(episode.question)
    durations = {v.index: v.duration for v in episode.videos}
    if asked is None or asked.video not in durations:
        return []
    duration = durations[asked.video]
    if asked.moment is not None:
        line = moment_line(episode, lines)
        if line is None:
            return []
        start, end = max(0.0, line.span[0] - pad), min(duration, line.span[1] + pad)
    elif asked.final:
        mine = [ln for ln in lines if ln.video == asked.video and ln.span and asked.names_target(ln.text)]
        start, end = (max(ln.span[0] for ln in mine) if mine else 0.75 * duration), duration
    else:
        return []
    return [("observe", {"video": asked.video, "start": round(start, 1), "end": round(end, 1), "focus": asked.target})]


def scan_lines(made: Sequence[Look]) -> list[Line]:
    """The seen (not heard) lines of the looks `made`, each with its video and stamp."""
    seen = [seen_from(look.action, look.observation) for look in made]
    return [line for line in evidence_lines(evidence_text(seen)) if not line.heard]


def search_thought(episode: Episode, made: Sequence[Look] = ()) -> str:
    """The search turn's thought: the question (cut at a word past `THOUGHT_QUESTION_CHARS`), then its kind's plan;
    for an MSR moment, where the scan `made` saw it (the stamp as the observation wrote it) and the look that
    follows."""
    question = " ".join(episode.question.split())
    if len(question) > THOUGHT_QUESTION_CHARS:
        question = question[:THOUGHT_QUESTION_CHARS].rsplit(" ", 1)[0] + " ..."
    return f"{question} {search_plan(episode, made)}"


def search_plan(episode: Episode, made: Sequence[Look] = ()) -> str:
    """The search's plan for this episode's kind, in words."""
    if episode.task in WINDOW_SECONDS:
        return f"Count again in each video in {WINDOW_SECONDS[episode.task]:g}-second windows."
    if episode.task in WINDOWS:
        return f"Look again at each video in {WINDOWS[episode.task]} windows."
    if episode.task in MOMENT_TASKS:  # the video by number: smol-v12 looked at the other view on 3 of 9 moment looks
        asked = multi_view_question(episode.question)
        if asked is None:
            return "Look at the asked view again around that moment."
        if asked.final or asked.moment_video is None:
            return f"Look at video {asked.video} from {asked.target}'s last place to its end."
        lines = scan_lines(made)
        line, calls = moment_line(episode, lines), moment_calls(episode, lines)
        if line is None or not calls:  # smol-v13 named the view right, its moment's time often not (session 30)
            return f"Look at video {asked.video} for {asked.target} around the moment video {asked.moment_video} shows."
        (_, look), (a, b) = calls[0], line.span
        return (
            f"Video {asked.moment_video} shows that moment at [{a:.1f}s - {b:.1f}s]: look at video {asked.video} "
            f"for {asked.target} from {look['start']:.1f}s to {look['end']:.1f}s."
        )
    if episode.task in ZOOM_TASKS:
        return "Zoom in on each option's step where the scan saw it."
    return "Look again where the question and the scan point."


def search_calls(episode: Episode, made: Sequence[Look]) -> list[Call]:
    """The search turn's calls after the looks `made` so far (none: answer now). Repeated calls are made once."""
    if episode.task in ZOOM_TASKS or episode.task in MOMENT_TASKS:
        lines = scan_lines(made)
        calls = zoom_calls(episode, lines) if episode.task in ZOOM_TASKS else moment_calls(episode, lines)
    elif episode.task in WINDOWS or episode.task in WINDOW_SECONDS:
        calls = window_calls(episode)
    else:
        return []
    unique: dict[tuple, Call] = {}
    for tool, arguments in calls:
        unique.setdefault((tool, *sorted(arguments.items())), (tool, arguments))
    return list(unique.values())


def on_share(calls: Callable[[Episode, Sequence[Look]], list[Call]], share: float) -> Callable[..., list[Call]]:
    """`calls` on a fixed `share` of episodes (by a hash of their id, so every run picks the same ones), none on the
    rest: a teacher that searches on some episodes only, so a warm start imitating it samples both plans and GRPO can
    choose between them."""

    def some(episode: Episode, made: Sequence[Look]) -> list[Call]:
        draw = int.from_bytes(hashlib.sha256(episode.id.encode()).digest()[:8], "big") / 2**64
        return calls(episode, made) if draw < share else []

    return some


def scan_then_search(
    scripts: Mapping[str, Script], protocol: Protocol, windows: int, frames: int, share: float = 1.0
) -> ScanThen:
    """The scan, then the search's turn (on `share` of the episodes): `reader_looks=search`'s looks and the `search`
    teacher."""
    return ScanThen(scripts, on_share(search_calls, share), protocol, windows, thought=search_thought, frames=frames)
