"""Answers matched from observed sentences (FSA's segment, CCQA's contrasts): real MiniLM vectors, real simulator
looks made by the scan teacher, scored by the task registry."""

from __future__ import annotations

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.agent import Agent
from agentcvr.episode import Episode, VideoRef
from agentcvr.interfaces import Limits
from agentcvr.matching import (
    contrasts,
    count_across_views,
    matching_segment,
    multi_view_question,
    place_at_moment,
)
from agentcvr.models import READER_BASE, ensure_model
from agentcvr.policies.scan_teacher import ScanTeacher, ScanThen
from agentcvr.policies.search import search_calls
from agentcvr.policies.teaching import looks
from agentcvr.reading import Line, evidence_lines, evidence_text, reads, reference_segment, seen_from
from agentcvr.sentences import SentenceEncoder
from agentcvr.tasks import TASKS
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def encoder():
    return SentenceEncoder(ensure_model(READER_BASE, progress=False))


def _scanned(script) -> list:
    """The scan teacher's looks at one episode, through the real simulator."""
    result = Agent(ScanTeacher({script.id: script}), ScriptSimulator({script.id: script}), Limits(max_turns=4)).run(
        script.episode
    )
    looks = [(s.arguments, s.tool, s.observation) for s in result.steps if s.kind == "tool"]
    return [
        seen_from(Listen(**args) if tool == "listen" else Observe(**args), observation)
        for args, tool, observation in looks
    ]


def _line(text: str, video: int, start: float) -> Line:
    """A seen line stamped over two seconds from `start`."""
    return Line(text, video, False, start + 1, (start, start + 2))


def _two_views(id: str, task: str, question: str, options: list[str]) -> Episode:
    """A multi-view episode: two drone views of one road, a minute each."""
    return Episode(
        id=id,
        task=task,
        question=question,
        options=options,
        videos=[VideoRef(index=1, duration=60), VideoRef(index=2, duration=60)],
    )


def _looked_lines(agent: Agent, script) -> list[Line]:
    """The lines of every look `agent` made at `script`'s episode, as the reader reads them."""
    _, messages = agent.converse(script.episode)
    seen = [seen_from(look.action, look.observation) for look in looks(messages, script.episode)]
    return evidence_lines(evidence_text(seen))


def test_the_reference_segment_is_read_from_either_context():
    videos = [VideoRef(index=1, duration=60.0), VideoRef(index=2, duration=60.0)]
    generated = Episode(
        id="g", task="FSA", question="q", videos=videos, context={"Reference segment in video 1": "12-20.5 s"}
    )
    crossvid = Episode(id="c", task="FSA", question="q", videos=videos, context={"ref_segment": [3, 7]})
    assert reference_segment(generated) == (12.0, 20.5) and reference_segment(crossvid) == (3.0, 7.0)
    assert not reads(Episode(id="n", task="FSA", question="q", videos=videos))  # no segment: nothing to match


def test_fsa_finds_in_video_2_the_step_video_1_showed(encoder):
    scripts = generate("FSA", 6, seed=10000)
    scores = [
        TASKS["FSA"].official(
            matching_segment(s.episode, evidence_lines(evidence_text(_scanned(s))), encoder) or "0,0", s.episode
        )
        for s in scripts
    ]
    assert sum(score == 1.0 for score in scores) >= 5  # the exact interval: the matched line's stamp


def test_ccqa_writes_contrasts_that_name_each_video(encoder):
    scripts = generate("CCQA", 6, seed=10000)
    answers = [contrasts(s.episode, evidence_lines(evidence_text(_scanned(s))), encoder) for s in scripts]
    named = [("A", "B") if "video A" in s.episode.question else ("1", "2") for s in scripts]  # as the question does
    assert all(
        a and f"In video {x}, " in a and f", whereas in video {y}, " in a
        for a, (x, y) in zip(answers, named, strict=True)
    )
    scores = [TASKS["CCQA"].official(a, s.episode) for a, s in zip(answers, scripts, strict=True)]
    assert sum(scores) / len(scores) > 0.3  # random's fixed sentence scores 0
    assert TASKS["CCQA"].official("Both videos show cooking steps.", scripts[0].episode) == 0.0


def test_ccqa_pairs_no_line_that_both_videos_show_alike(encoder):
    episode = _two_views("q", "CCQA", "How do the chefs in video A and video B differ in making pancakes?", [])
    greet, talk = "The chef stands at a kitchen counter and greets the camera.", "The chef talks to the camera."
    whisk = "The chef whisks flour, sugar and baking powder together in a bowl with a whisk."
    mixer = "The chef tips flour, sugar and baking powder into a stand mixer bowl."
    lines = [_line(greet, 1, 2), _line(talk, 1, 10), _line(whisk, 1, 20)]
    lines += [_line(talk, 2, 2), _line(greet, 2, 10), _line(mixer, 2, 20)]
    answer = contrasts(episode, lines, encoder)
    # the fillers, each in both videos, once paired with each other ("greets" whereas "talks") before the step
    assert (
        answer == "In video A, the chef whisks flour, sugar and baking powder together in a bowl with a whisk, "
        "whereas in video B, the chef tips flour, sugar and baking powder into a stand mixer bowl."
    )
    assert "greets" in contrasts(episode, lines[:2] + lines[3:5], encoder)  # nothing else: the fillers it is


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "When obj_1 and obj_3 are side by side in view B, where is obj_5 in view A?",
            ("obj_5", 1, "obj_1 and obj_3 are side by side", 2, False),
        ),
        (
            "When obj_2 completely leaves view A, where is obj_4 in view B?",
            ("obj_4", 2, "obj_2 completely leaves", 1, False),
        ),
        ("What is the final driving trajectory of obj_2 in view A?", ("obj_2", 1, None, None, True)),
    ],
)
def test_a_multi_view_question_names_its_object_view_and_moment(question, parts):
    asked = multi_view_question(question)
    assert (asked.target, asked.video, asked.moment, asked.moment_video, asked.final) == parts
    assert multi_view_question("Which video shows the chef frying rice?") is None


def test_msr_is_answered_from_the_asked_views_lines_at_the_moment_and_else_left_to_the_reader():
    episode = _two_views(
        "m",
        "MSR",
        "When obj_1 and obj_3 are side by side in view B, where is obj_5 in view A?",
        ["A. Top left of the frame", "B. Not shown in the view", "C. Bottom right of the frame"],
    )
    moment = _line("obj_1 and obj_3 are side by side.", 2, 20)
    # "Obj_5" as rendered text writes an object that starts its sentence
    at_moment = _line("Obj_5 (red car) is at the bottom right of the frame, in the leftmost lane.", 1, 20)
    earlier = _line("obj_5 (red car) is at the top left of the frame, in the leftmost lane.", 1, 4)
    assert place_at_moment(episode, [moment, earlier, at_moment]) == "C"
    without = _line("obj_2 (white bus) is at the top left of the frame.", 1, 20)
    assert place_at_moment(episode, [moment, earlier, without]) == "B"  # view A seen then, obj_5 not in it
    assert place_at_moment(episode, [moment, earlier]) is None  # view A not seen at the moment: the reader reads
    assert place_at_moment(episode, [earlier, at_moment]) is None  # the moment never seen


def test_msr_reads_the_asked_views_line_nearest_the_moment():
    episode = _two_views(
        "n",
        "MSR",
        "When obj_5 completely leaves view A, where is obj_4 in view B?",
        ["A. Not shown in the view", "B. Top right of the frame", "C. Bottom left", "D. Top center of the frame"],
    )
    moment = _line("obj_5 (person in a yellow coat) completely leaves the view at the top edge.", 1, 69)
    at_moment = _line("obj_4 (blue car) is at the top center of the frame, in the second lane from the left.", 2, 69)
    after = _line("obj_4 (blue car) is at the top right of the frame, in the second lane from the left.", 2, 71)
    assert place_at_moment(episode, [moment, after, at_moment]) == "D"  # 71 s is within reach, 69 s is the moment


def test_msr_final_lane_is_the_last_place_said_and_a_lane_change_ends_in_its_new_lane():
    episode = _two_views(
        "f",
        "MSR",
        "What is the final driving trajectory of obj_1 in view A?",
        ["A. In the rightmost lane", "B. In the leftmost lane", "C. In the second lane from the right"],
    )
    change = _line(
        "obj_1 (grey truck) is at the top left of the frame, moving from the second lane from the right "
        "into the leftmost lane.",
        1,
        63,
    )
    gone = _line("obj_1 (grey truck) completely leaves the view at the right edge.", 1, 71)
    other = _line("obj_2 (white car) is at the bottom right of the frame, in the rightmost lane.", 1, 79)
    assert place_at_moment(episode, [change, gone, other]) == "B"  # not the lane it left, not the line that leaves
    # "top right" shares "right" with the second lane from the right; the phrase it says is the leftmost lane
    kept = _line("obj_1 (grey truck) is at the top right of the frame, in the leftmost lane.", 1, 66)
    assert place_at_moment(episode, [kept, gone]) == "B"


def test_msr_matching_reads_generated_episodes_better_than_chance():
    """Through the real simulator at 128 frames a look, the scan then the search's moment look: the matched places
    score well above the options' chance (1 in 4)."""
    scripts = generate("MSR", 40, seed=7)
    table = {s.id: s for s in scripts}
    agent = Agent(
        ScanThen(table, search_calls, frames=128), ScriptSimulator(table, sampling="frames"), Limits(max_turns=6)
    )
    right = answered = 0
    for script in scripts:
        placed = place_at_moment(script.episode, _looked_lines(agent, script))
        if placed is not None:
            answered += 1
            right += placed == script.answer
    assert answered >= 30 and right / answered > 0.5


def test_moc_counts_a_line_cut_at_the_observation_limit_as_the_line_it_begins():
    episode = _two_views(
        "t", "MOC", "How many white cars parked by the roadside does obj_4 pass?", ["A. 1", "B. 2", "C. 3"]
    )
    whole = "obj_4 passes a white car parked by the roadside in front of a school."
    seen = [_line(whole[:50], 1, 10), _line(whole, 2, 10), _line(whole.replace("a school", "a bakery"), 1, 40)]
    assert count_across_views(episode, seen) == "B"  # two cars: the cut line (view A) is the school's, seen in view B


def test_moc_counts_each_event_once_across_views_and_skips_what_the_question_does_not_count():
    episode = _two_views("c", "MOC", "How many cyclists pass obj_3?", ["A. 1", "B. 2", "C. 3", "D. 4"])
    # "Obj_3" as rendered text writes an object that starts its sentence
    red, blue = "A cyclist in a red jacket overtakes obj_3.", "A cyclist in a blue jacket overtakes Obj_3."
    decoys = [
        _line("A motorcyclist overtakes obj_3.", 1, 30),  # not a cyclist
        _line("A cyclist in a grey jacket overtakes obj_1.", 2, 12),  # not obj_3
        _line("obj_3 (white car) is at the top left of the frame.", 1, 2),
    ]
    # red seen in both views and in two frames of view A: one event; "pass" is never said of obj_3, so not asked
    seen = [_line(red, 1, 10), _line(red, 1, 11), _line(red.replace("obj", "Obj"), 2, 10), _line(blue, 2, 40)]
    seen += decoys
    assert count_across_views(episode, seen) == "B"
    assert count_across_views(episode, seen[:1] + decoys) == "A"
    assert count_across_views(episode, decoys[1:2]) is None  # no line names obj_3: the reader reads
    sedans = episode.model_copy(update={"question": "How many grey sedans overtake obj_3?"})
    assert count_across_views(sedans, [_line("A grey SUV overtakes obj_3.", 1, 5), *decoys]) == "A"  # 0: the nearest


def test_moc_counting_reads_generated_episodes_far_better_than_chance():
    """Through the real simulator after the scan at 128 frames a look, the counts pick the right option on most
    episodes (the option reader: 13-28 %; chance 1 in 4)."""
    scripts = generate("MOC", 40, seed=7)
    table = {s.id: s for s in scripts}
    agent = Agent(ScanTeacher(table, frames=128), ScriptSimulator(table, sampling="frames"), Limits(max_turns=4))
    right = sum(count_across_views(s.episode, _looked_lines(agent, s)) == s.answer for s in scripts)
    assert right / len(scripts) > 0.5
