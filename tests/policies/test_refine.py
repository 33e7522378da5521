"""FSA's closer looks: around the matched segment, padded by one frame spacing, until the frames are fine."""

from __future__ import annotations

from agentcvr.actions import Observe
from agentcvr.policies.refine import FINE_SPACING, refine_call
from agentcvr.policies.teaching import Look
from scripts_gen.generate import generate_one


def look(video: int, start: float | None = None, end: float | None = None, frames: int = 16) -> Look:
    return Look(Observe(video=video, start=start, end=end, num_frames=frames), "")


def test_the_closer_look_pads_the_match_by_the_covering_looks_frame_spacing():
    episode = generate_one("FSA", 0, 5).episode
    duration = episode.videos[1].duration
    made = [look(1, 10.0, 40.0), look(2)]  # the reference segment, then video 2 whole
    step = duration / 16
    assert step > FINE_SPACING
    tool, args = refine_call(episode, made, "200,260")
    assert (tool, args["video"]) == ("observe", 2)
    assert args["start"] == round(max(0.0, 200 - step), 1) and args["end"] == round(min(duration, 260 + step), 1)
    closer = [*made, look(2, args["start"], args["end"])]
    tool, again = refine_call(episode, closer, "200,260")  # still coarser than FINE_SPACING: closer again
    assert again["end"] - again["start"] < args["end"] - args["start"]
    fine = [*closer, look(2, again["start"], again["end"])]
    assert refine_call(episode, fine, "200,260") is None  # fine enough: the match is answered as it is


def test_no_closer_look_where_it_would_not_help():
    episode = generate_one("FSA", 0, 5).episode
    made = [look(1, 10.0, 40.0), look(2)]
    assert refine_call(episode, made, None) is None  # nothing matched
    assert refine_call(episode, made, "about a minute in") is None  # not a stamp
    assert refine_call(episode, [look(1, 10.0, 40.0)], "200,260") is None  # no look at video 2 covers it
    assert refine_call(episode, [*made, look(2, 190.0, 270.0, frames=64)], "200,260") is None  # dense frames there
    call = refine_call(episode, made, "200,260")
    repeated = [*made, look(2, call[1]["start"], call[1]["end"], frames=1)]  # made already (sparse as it was)
    assert refine_call(episode, repeated, "200,260") is None  # the same look again cannot get finer
    other = generate_one("PEA", 0, 5).episode
    assert refine_call(other, [look(1)], "0,10") is None  # FSA only
