"""What the reader reads: headers that name each look's source, short timestamps, option letters."""

from __future__ import annotations

from agentcvr.actions import Listen, Observe
from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.teaching import looks
from agentcvr.reading import (
    Line,
    compact_stamps,
    evidence_lines,
    evidence_text,
    header,
    look_video,
    option_letters,
    option_number,
    reads,
    seen_from,
    split_looks,
    videos_named,
)


def test_stamps_are_written_short_in_both_tools_forms():
    assert compact_stamps("[40.0s - 42.5s] a bus\n[3.0 - 7.0]: hello") == "[40-42.5] a bus\n[3-7] hello"


def test_each_look_is_headed_by_its_video_and_how_it_was_taken():
    assert header(seen_from(Observe(video=2, start=40, end=62, focus="x"), "")) == "Video 2, seen 40-62 s:"
    assert header(seen_from(Listen(video=3), "")) == "Video 3, heard, whole video:"


def test_option_letters_come_from_labels_or_positions():
    assert option_letters(["A. Video 1", "C. Video 3"]) == ["A", "C"]
    assert option_letters(["first", "second"]) == ["A", "B"]


def test_evidence_of_a_real_scan_names_every_source(pet_script, simulator):
    episode = pet_script.episode
    _, messages = Agent(ScanTeacher({pet_script.id: pet_script}), simulator, Limits(max_turns=4)).converse(episode)
    text = evidence_text([seen_from(look.action, look.observation) for look in looks(messages, episode)])
    assert text.splitlines()[0] == "Video 1, heard 0-30 s:"  # NC: the scan listens first
    assert "Video 2, seen 0-40 s:\n[5-12] a brown dog runs in a park" in text
    assert reads(episode)


def test_evidence_splits_back_into_its_looks_and_their_videos(pet_script, simulator):
    episode = pet_script.episode
    _, messages = Agent(ScanTeacher({pet_script.id: pet_script}), simulator, Limits(max_turns=4)).converse(episode)
    seen = [seen_from(look.action, look.observation) for look in looks(messages, episode)]
    parts = split_looks(evidence_text(seen))
    assert len(parts) == len(seen)
    assert [look_video(part) for part in parts] == [look.video for look in seen]


def test_evidence_lines_are_sentences_that_keep_their_video_and_time():
    text = evidence_text(
        [
            seen_from(Observe(video=1, start=50, end=54, focus="x"), "[50.0s - 52.0s] obj_2 is left. obj_3 is right."),
            seen_from(Listen(video=2), "[3.0s - 7.0s] We leave tonight."),
        ]
    )
    assert evidence_lines(text) == [
        Line("obj_2 is left.", 1, False, 51.0),
        Line("obj_3 is right.", 1, False, 51.0),
        Line("We leave tonight.", 2, True, 5.0),
    ]


def test_options_name_videos_or_counts_in_the_generators_words():
    assert videos_named("Videos 3 and 4") == {3, 4}
    assert videos_named("Video one.") == {1}
    assert videos_named("Video 1 only") == {1}
    assert videos_named("detach the boom and the cabin") == frozenset()
    assert option_number("5") == 5.0 and option_number("Top left of the frame") is None


def test_the_describers_scene_line_is_read_as_its_on_screen_text():
    from agentcvr.perception.describer import Scene, _scene_text

    scene = Scene(
        0, 3, 4.0, 12.5, text="A heron spears a fish.", colours=[("dark green", 0.62)], motion="Something moves"
    )
    plain = Scene(0, 3, 12.5, 20.0, colours=[("white", 0.5), ("dark blue", 0.4)], motion="A red object moves")
    observation = f"[4.0s - 12.5s] {_scene_text(scene)}\n[12.5s - 20.0s] {_scene_text(plain)}"
    lines = evidence_lines(evidence_text([seen_from(Observe(video=2, focus="fish"), observation)]))
    assert lines[0] == Line("A heron spears a fish.", 2, False, 8.25)  # not its colours, nor its motion
    assert [line.text for line in lines[1:]] == ["Colours: white 50%, dark blue 40%; a red object moves."]
