"""The search turn: a second look chosen from the question, the options and the scan's lines only."""

from __future__ import annotations

import pytest

from agentcvr.actions import Observe
from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.matching import multi_view_question
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.search import (
    MOMENT_PAD,
    THOUGHT_QUESTION_CHARS,
    WINDOW_SECONDS,
    WINDOWS,
    option_step,
    scan_then_search,
    search_calls,
    search_thought,
)
from agentcvr.policies.teaching import Look
from agentcvr.reading import best_line, evidence_lines, evidence_text, roots, seen_from
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator


def scan_looks(script, simulator: ScriptSimulator) -> list[Look]:
    """The scan teacher's first turn at `script`, with what the simulator returns."""
    episode = script.episode
    calls = ScanTeacher({script.id: script}).turns(episode)[0]
    whole = {v.index: v.duration for v in episode.videos}
    observes = [Observe(video=a["video"], start=0, end=whole[a["video"]], focus=episode.question) for _, a in calls]
    return [Look(action, simulator.observe(episode, action)) for action in observes]


def test_an_option_names_its_videos_and_its_step():
    assert option_step("B. Video 2: Detach the roof and the cabin") == ([2], "Detach the roof and the cabin")
    assert option_step("A. Video1") == ([1], "")
    assert option_step("C) Videos differ: none") == ([], "Videos differ: none")


@pytest.mark.parametrize("index", range(4))
def test_pea_zooms_on_each_options_step_where_the_scan_saw_it(index):
    pea = generate_one("PEA", index, 5)
    simulator = ScriptSimulator({pea.id: pea})
    made = scan_looks(pea, simulator)
    calls = search_calls(pea.episode, made)
    assert calls and all(tool == "observe" for tool, _ in calls)
    seen = [seen_from(look.action, look.observation) for look in made]
    lines = [line for line in evidence_lines(evidence_text(seen)) if line.span]
    every = [video.index for video in pea.episode.videos]
    named = {(v, step) for videos, step in map(option_step, pea.episode.options) for v in videos or every}
    for _, arguments in calls:  # each over the stamp of the seen line most like its option's step, the step as focus
        step, video = arguments["focus"], arguments["video"]
        assert (video, step) in named
        mine = [line for line in lines if line.video == video]
        most = max(len(roots(step) & roots(line.text)) for line in mine)
        zoomed = [line for line in mine if line.span == (arguments["start"], arguments["end"])]
        assert zoomed and len(roots(step) & roots(zoomed[0].text)) == most > 0


@pytest.mark.parametrize("task", sorted(WINDOWS))
def test_nc_and_ccqa_look_again_in_windows_that_cover_every_video(task):
    script = generate_one(task, 0, 5)
    calls = search_calls(script.episode, [])
    for video in script.episode.videos:
        mine = [arguments for _, arguments in calls if arguments["video"] == video.index]
        assert len(mine) == WINDOWS[task]
        assert mine[0]["start"] == 0 and mine[-1]["end"] == round(video.duration, 1)
        assert all(a["end"] == b["start"] for a, b in zip(mine, mine[1:], strict=False))
        assert {a["focus"] for a in mine} == {script.episode.question}


def test_moc_counts_again_in_windows_of_fixed_width_that_cover_every_video():
    """Edges a small model can write: multiples of the width from 0, then the video's end (no division)."""
    width = WINDOW_SECONDS["MOC"]
    for index in range(5):
        script = generate_one("MOC", index, 5)
        calls = search_calls(script.episode, [])
        for video in script.episode.videos:
            mine = [arguments for _, arguments in calls if arguments["video"] == video.index]
            assert mine[0]["start"] == 0 and mine[-1]["end"] == round(video.duration, 1)
            assert all(a["end"] == b["start"] for a, b in zip(mine, mine[1:], strict=False))
            assert [a["start"] for a in mine] == [width * i for i in range(len(mine))]
            assert all(0 < a["end"] - a["start"] < width + 1 for a in mine)  # the last piece may take a second more
            assert {a["focus"] for a in mine} == {script.episode.question}


def test_fixed_width_windows_leave_no_sliver_at_the_end():
    from agentcvr.policies.scan_teacher import windows_every

    assert windows_every(78.0, 20) == [(0, 20), (20, 40), (40, 60), (60, 78.0)]
    assert windows_every(80.0, 20) == [(0, 20), (20, 40), (40, 60), (60, 80.0)]
    assert windows_every(60.5, 20) == [(0, 20), (20, 40), (40, 60.5)]  # not 60-60.5
    assert windows_every(12.0, 20) == [(0, 12.0)]


def test_msr_looks_at_the_asked_view_around_the_moment_the_other_view_showed():
    """ "When X in view B, where is obj_N in view A?": view A around the stamp of view B's line most like X, obj_N as
    the focus; "the final ... of obj_N in view A": view A from obj_N's last scan line to its end."""
    moments = finals = 0
    for index in range(30):
        script = generate_one("MSR", index, 5)
        asked = multi_view_question(script.episode.question)
        assert asked is not None
        made = scan_looks(script, ScriptSimulator({script.id: script}))
        calls = search_calls(script.episode, made)
        lines = [line for line in evidence_lines(evidence_text([seen_from(m.action, m.observation) for m in made]))]
        if not calls:
            continue
        [(tool, arguments)] = calls
        assert tool == "observe" and arguments["video"] == asked.video and arguments["focus"] == asked.target
        if asked.moment is not None:
            anchor = best_line([ln for ln in lines if ln.video == asked.moment_video and ln.span], asked.moment)
            assert arguments["start"] <= anchor.span[0] and arguments["end"] >= anchor.span[1]
            assert arguments["end"] - arguments["start"] <= anchor.span[1] - anchor.span[0] + 2 * MOMENT_PAD
            moments += 1
        else:
            assert asked.final and arguments["end"] == round(script.episode.videos[asked.video - 1].duration, 1)
            finals += 1
    assert moments >= 10 and finals >= 5


@pytest.mark.parametrize("task", ["BU", "CC", "PI", "FSA", "PSS"])
def test_other_kinds_get_no_search(task):
    script = generate_one(task, 0, 5)
    assert search_calls(script.episode, scan_looks(script, ScriptSimulator({script.id: script}))) == []


@pytest.mark.parametrize(
    ("task", "plan"),
    [("MSR", "look at video {video} for {target} from"), ("MOC", "Count again in each video in 30-second windows")],
)
def test_the_search_turn_restates_the_question_and_names_its_kinds_plan(task, plan):
    """smol-v11 took MSR's plan for MOC and MOC's for MSR on half its searches: the thought now names the plan."""
    script = generate_one(task, 1, 5)
    teacher = scan_then_search({script.id: script}, "json", windows=1, frames=128)
    result = Agent(teacher, ScriptSimulator({script.id: script}, sampling="frames"), Limits(max_turns=6)).run(
        script.episode
    )
    thoughts = [step.thought for step in result.steps if step.thought]
    assert len(thoughts) == 2 and thoughts[0].startswith("Scan every video")  # the scan's turn, then the search's
    question = " ".join(script.episode.question.split())
    asked = multi_view_question(question)
    plan = plan.format(video=asked.video, target=asked.target) if asked else plan
    assert thoughts[1].startswith(question) and plan in thoughts[1]


def test_an_msr_moment_thought_quotes_the_scan_stamp_and_the_look_that_follows():
    """smol-v13 looked at the asked view at the wrong time (24-48 s for the teacher's 68-78): the thought now copies
    the moment line's stamp as the observation wrote it, then the look's interval, before the call."""
    script = generate_one("MSR", 1, 5)
    made = scan_looks(script, ScriptSimulator({script.id: script}, sampling="frames"))
    ((_, look),) = search_calls(script.episode, made)
    thought = search_thought(script.episode, made)
    stamp = thought.split(" shows that moment at ")[1].split("]")[0] + "]"
    assert any(stamp in m.observation for m in made)  # copied, not computed
    interval = f"from {look['start']:.1f}s to {look['end']:.1f}s."
    assert f"look at video {look['video']} for {look['focus']} {interval}" in thought
    start = float(stamp[1:].split("s")[0])
    assert look["start"] == max(0.0, start - MOMENT_PAD)


def test_a_long_question_is_cut_at_a_word_in_the_thought():
    script = generate_one("NC", 0, 5)
    long = script.episode.model_copy(update={"question": "why " * 60})
    thought = search_thought(long)
    assert thought.startswith("why why") and " ... Look again at each video in 3 windows." in thought
    assert len(thought) < THOUGHT_QUESTION_CHARS + 60
