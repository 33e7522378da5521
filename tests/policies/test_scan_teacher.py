"""The scan teacher through the real loop and simulator: its calls come only from what the policy sees, its answer
is the truth only when the evidence came back."""

from __future__ import annotations

import pytest

from agentcvr.actions import Observe
from agentcvr.agent import Agent
from agentcvr.episode import question_focus
from agentcvr.interfaces import Limits
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.tasks import get_task
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.evaluate import evidence_seen


def run(script, max_observation_chars: int = 600):
    table = {script.id: script}
    limits = Limits(max_turns=4, max_observation_chars=max_observation_chars)
    return Agent(ScanTeacher(table), ScriptSimulator(table), limits).run(script.episode)


def test_scans_every_video_whole_then_answers_the_truth():
    script = generate_one("CC", 2, 10000)
    result = run(script)
    looks = [step for step in result.steps if step.kind == "tool"]
    assert [step.arguments["video"] for step in looks] == [v.index for v in script.videos]
    assert all(step.arguments["start"] == 0 and step.turn == 0 for step in looks)  # one turn, whole videos
    assert {step.arguments["focus"] for step in looks} == {""}  # nothing to copy: the loop supplies the question
    asked = Observe(video=1, start=0, end=script.videos[0].duration, focus=question_focus(script.episode))
    assert looks[0].observation == ScriptSimulator({script.id: script}).observe(script.episode, asked)[:600]
    assert evidence_seen(result, script)
    assert result.answer == get_task("CC").official_form(script.answer)


def test_with_windows_each_video_is_looked_at_in_contiguous_windows_and_more_comes_back():
    script = generate_one("MSR", 1, 10000)
    table = {script.id: script}
    limits = Limits(max_turns=4, max_observation_chars=600)
    result = Agent(ScanTeacher(table, windows=3), ScriptSimulator(table), limits).run(script.episode)
    looks = [step for step in result.steps if step.kind == "tool"]
    assert {step.turn for step in looks} == {0}
    for video in script.videos:
        spans = [(s.arguments["start"], s.arguments["end"]) for s in looks if s.arguments["video"] == video.index]
        assert len(spans) == 3 and spans[0][0] == 0
        assert all(left[1] == right[0] for left, right in zip(spans, spans[1:], strict=False))  # no gap, no overlap
        assert spans[-1][1] == pytest.approx(video.duration, abs=0.05)

    def lines(r):
        return sum(len(s.observation.splitlines()) for s in r.steps if s.kind == "tool")

    assert lines(result) > lines(run(script))
    with pytest.raises(ValueError, match="windows must be at least 1"):
        ScanTeacher(table, windows=0)


def test_frames_are_asked_of_every_scan_look_and_a_frame_sampling_simulator_then_shows_more():
    script = generate_one("CC", 2, 10000)
    table = {script.id: script}
    sim = ScriptSimulator(table, max_events=100, sampling="frames")

    def scan(frames):
        result = Agent(ScanTeacher(table, frames=frames), sim, Limits(max_turns=4)).run(script.episode)
        return [step for step in result.steps if step.kind == "tool"]

    sparse, dense = scan(16), scan(128)
    assert {s.arguments["num_frames"] for s in sparse} == {16} and {s.arguments["num_frames"] for s in dense} == {128}
    lines = [sum(len(s.observation.splitlines()) for s in looks) for looks in (sparse, dense)]
    assert lines[0] < lines[1]  # at 16 frames over minutes of cooking, steps fall between frames
    assert ScanTeacher(table).scan_calls(1, 60.0) == [("observe", {"video": 1})]  # the default writes no frames
    with pytest.raises(ValueError, match="frames must be 1..128"):
        ScanTeacher(table, frames=129)


def test_movie_tasks_also_listen():
    result = run(generate_one("PI", 1, 10000))
    assert [step.tool for step in result.steps] == ["listen", "listen", "observe", "observe", "answer"]


def test_the_calls_do_not_read_the_script():
    script = generate_one("PEA", 3, 10000)
    moved = script.model_copy(update={"evidence": [e.model_copy(update={"start": 0.0}) for e in script.evidence]})
    calls = [(s.tool, s.arguments) for s in run(script).steps if s.kind == "tool"]
    assert calls == [(s.tool, s.arguments) for s in run(moved).steps if s.kind == "tool"]


def test_without_the_evidence_it_answers_at_random():
    task = get_task("CC")
    truths = wrong = 0
    for index in range(16):
        script = generate_one("CC", index, 10000)
        result = run(script, max_observation_chars=100)  # cut short: the evidence rarely comes back
        if evidence_seen(result, script):
            continue
        assert task.normalize(result.answer) is not None  # still a well-formed answer
        truths += result.answer == task.official_form(script.answer)
        wrong += result.answer != task.official_form(script.answer)
    assert wrong > truths  # a guess, not the truth
