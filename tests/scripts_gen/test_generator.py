"""The procedural generator: every task kind yields valid scripts shaped like CrossVid items, deterministically."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from agentcvr.script import Script
from agentcvr.tasks import TASK_ORDER, get_task
from scripts_gen.generate import GENERATORS, generate, generate_one
from scripts_gen.templates import behavior
from scripts_gen.templates.recipes import ASIDES, KITCHEN, RECIPES

N = 40  # per task: enough to hit every question form of every template


@cache
def scripts(task: str) -> list[Script]:
    return generate(task, N, seed=3)


def test_registry_covers_every_task_kind():
    assert list(GENERATORS) == TASK_ORDER


@pytest.mark.parametrize("task", TASK_ORDER)
def test_scripts_are_valid_and_round_trip(task):
    for index, script in enumerate(scripts(task)):
        assert script.id == f"{task}-{index:06d}" and script.task == task
        assert Script.model_validate(json.loads(script.model_dump_json())) == script
        episode = script.episode
        assert episode.public().keys() >= {"question", "options", "videos"} and "answer" not in episode.public()
        official = get_task(task).official_form(script.answer)
        assert get_task(task).official(official, episode) == 1.0  # the ground truth scores 1 with the official scorer
        assert script.evidence, "every question says where its answer is"
        for item in script.evidence:
            video = script.videos[item.video - 1]
            assert 0 <= item.start < item.end <= video.duration + 1e-6
        for video in script.videos:
            assert video.events, f"{script.id}: video {video.index} is empty"


LETTER = re.compile(r"^[A-F]$")
SHAPES = {  # task -> (videos, options, answer pattern on the official form)
    "BU": ({3, 4}, {3, 4}, re.compile(r"^A?B?C?D?$")),
    "NC": ({4}, {4}, LETTER),
    "CC": ({4}, {4}, LETTER),
    "PEA": ({3}, {4}, LETTER),
    "PI": ({2}, {6}, LETTER),
    "FSA": ({2}, {0}, re.compile(r"^\d+(\.\d+)?,\d+(\.\d+)?$")),
    "PSS": ({3, 4, 5, 6}, {0}, re.compile(r"^\d(->\d){2,5}$")),
    "MSR": ({2}, {4}, LETTER),
    "MOC": ({2}, {4}, LETTER),
    "CCQA": ({2}, {0}, re.compile(r"\w")),
}


@pytest.mark.parametrize("task", TASK_ORDER)
def test_shapes_mirror_crossvid(task):
    n_videos, n_options, pattern = SHAPES[task]
    for script in scripts(task):
        assert len(script.videos) in n_videos and len(script.options) in n_options
        assert pattern.search(get_task(task).official_form(script.answer))
        for i, option in enumerate(script.options):
            assert option.startswith(f"{'ABCDEF'[i]}. ")


def test_bu_answers_are_letter_lists_with_one_to_three_correct():
    for script in scripts("BU"):
        assert isinstance(script.answer, list) and script.answer == sorted(set(script.answer))
        assert 1 <= len(script.answer) <= min(3, len(script.videos) - 1)
        assert all(0.3 <= v.duration <= 20 for v in script.videos)  # short behavior clips


def test_fsa_reference_segment_is_context_and_answer_is_in_video_2():
    for script in scripts("FSA"):
        start, end = script.reference["ref_segment"]
        assert script.context == {"Reference segment in video 1": f"{start:g}-{end:g} s"}
        assert 0 <= script.answer[0] < script.answer[1] <= script.videos[1].duration
        assert end <= script.videos[0].duration


def test_pss_clips_are_segments_of_one_video_with_offsets():
    for script in scripts("PSS"):
        order = [int(x) for x in script.answer.split("->")]
        assert sorted(order) == list(range(1, len(script.videos) + 1))
        offsets = [script.videos[n - 1].offset for n in order]
        assert offsets == sorted(offsets), "the answer lists the clips in the order of their offsets"
        assert len({v.source for v in script.videos}) == 1
        for number, parts in script.reference["segments"].items():
            clip = script.videos[int(number) - 1]
            assert parts[0][0] == clip.offset and parts[-1][1] == pytest.approx(clip.offset + clip.duration)


def test_pi_and_pea_present_clips_with_offsets():
    for script in scripts("PI"):
        beginning, ending = script.videos
        assert (beginning.label, ending.label) == ("beginning", "ending") and beginning.offset == 0
        assert ending.offset == script.reference["ending"][0] > beginning.duration
        assert script.question and len(script.options) == 6
    for script in scripts("PEA"):
        assert [v.offset for v in script.videos] == script.reference["begin"]
        for video, total in zip(script.videos, script.reference["duration"], strict=True):
            assert video.offset + video.duration <= total


def test_uav_views_and_object_hints():
    for script in scripts("MSR") + scripts("MOC"):
        assert [v.label for v in script.videos] == ["view A", "view B"]
        assert script.videos[0].duration == script.videos[1].duration
        assert set(script.context) == {f"obj_{k}" for k in range(1, 6)}
        assert re.search(r"obj_[1-5]", script.question)
    counts = [s for s in scripts("MOC")]
    for script in counts:  # consecutive counts, as in CrossVid
        numbers = [int(o.split(". ")[1]) for o in script.options]
        assert numbers == list(range(numbers[0], numbers[0] + 4))


def test_ccqa_points_keywords_and_reference_answer():
    for script in scripts("CCQA"):
        points, keywords = script.reference["scoring_points"], script.reference["point_keywords"]
        assert 3 <= len(points) == len(keywords) <= 4
        for keys in keywords:
            assert all(k.lower() in script.answer.lower() for k in keys)
            assert not any(k.lower() in script.question.lower() for k in keys), "the question must not give it away"
        assert [v.label for v in script.videos] == ["video A", "video B"]
        for keys, sides in zip(keywords, script.reference["point_videos"], strict=True):
            assert sorted(k for k in sides.values() if k) == sorted(keys)  # each keyword belongs to one video


@pytest.mark.parametrize("task", TASK_ORDER)
def test_deterministic_per_seed_and_independent_of_n(task):
    first = [s.model_dump() for s in generate(task, 3, seed=11)]
    assert first == [s.model_dump() for s in generate(task, 3, seed=11)]
    assert first == [s.model_dump() for s in generate(task, 6, seed=11)][:3]
    assert first[2] == generate_one(task, 2, seed=11).model_dump()
    assert first != [s.model_dump() for s in generate(task, 3, seed=12)]


def test_all_and_unknown_task():
    every = generate("all", 2, seed=0)
    assert [s.task for s in every] == [t for t in TASK_ORDER for _ in range(2)]
    with pytest.raises(KeyError, match="choose 'all' or one of BU, NC"):
        generate("XYZ", 1)


def test_recipe_vocabulary_invariants():
    for dish, steps in RECIPES.items():
        names = [m[0] for _, _, methods in steps for m in methods]
        assert len(names) == len(set(names)), dish
        for name, how, visual in (m for _, _, methods in steps for m in methods):
            assert name in how and name in visual.lower(), name
            assert not [other for other in names if other != name and name in other], f"{dish}: {name} is ambiguous"
        for visual, speech in KITCHEN + ASIDES:
            text = f"{visual} {speech or ''}".lower()
            assert not [n for n in names if n in text], f"background {visual!r} names a method"
        assert any(optional for _, optional, _ in steps), f"{dish}: CC 'skip' questions need an optional step"


def test_behavior_tags_leave_enough_positives_and_negatives():
    for tag in behavior.QUESTIONS:
        positives = [b for b in behavior.BEHAVIORS if tag in behavior._tags(b[3])[0]]
        negatives = [b for b in behavior.BEHAVIORS if tag not in set().union(*behavior._tags(b[3]))]
        assert len(positives) >= 3 and len(negatives) >= 3, tag
