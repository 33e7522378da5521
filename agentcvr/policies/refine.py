"""FSA's answer is a stamp, and a stamp is only as fine as the frames of the look that saw it: a whole-video look at
16 frames over a 12-minute cooking video samples every ~45 s, so real perception's lines start and end up to that far
from the segment, and a segment shorter than the spacing can fall between frames and be missed. Before the matcher
answers, the segment it would answer is observed again, padded by one frame spacing on each side, until the spacing
is fine (`FINE_SPACING`). The call depends only on the question and what was seen; in the simulator, whose stamps
are exact whatever the frames, it changes nothing but costs a turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentcvr.episode import Episode
from agentcvr.policies.teaching import Call, Look

FINE_SPACING = 6.0  # seconds between a look's frames below which its stamps are taken as they are
REFINE_THOUGHT = "Look closer at the matched segment of video 2 to find where it starts and ends."


def spacing(look: Look, duration: float) -> float:
    """Seconds between the frames of an observe (the whole video where it gives no interval)."""
    start = look.action.start or 0.0
    end = look.action.end if look.action.end is not None else duration
    return max(0.0, end - start) / max(1, getattr(look.action, "num_frames", 1))


def refine_call(episode: Episode, made: Sequence[Look], answer: str | None) -> Call | None:
    """The closer look at FSA's matched segment (`answer`, 'start,end' in video 2), or None when the finest look
    that covers it is already fine, or when that closer look was already made."""
    if episode.task != "FSA" or answer is None or len(episode.videos) < 2:
        return None
    try:
        first, last = (float(part) for part in answer.split(","))
    except ValueError:
        return None
    video = episode.videos[1]
    covering = [
        look
        for look in made
        if look.action.tool == "observe"
        and look.action.video == video.index
        and (look.action.start or 0.0) <= first
        and (look.action.end if look.action.end is not None else video.duration) >= last
    ]
    if not covering:
        return None
    step = min(spacing(look, video.duration) for look in covering)
    if step <= FINE_SPACING:
        return None
    start, end = round(max(0.0, first - step), 1), round(min(video.duration, last + step), 1)
    if any(look.action.video == video.index and (look.action.start, look.action.end) == (start, end) for look in made):
        return None  # looked there already: the stamps will not get finer
    return ("observe", {"video": video.index, "start": start, "end": end})
