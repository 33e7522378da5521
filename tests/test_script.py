"""A `Script` holds its `Episode`: the flat, published-compatible form goes in and comes out unchanged, the episode's
videos come from the timelines, and the question's fields are changed through the episode only."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentcvr.episode import Episode, VideoRef
from agentcvr.script import Script, read_jsonl, write_jsonl
from scripts_gen.generate import generate

FLAT_KEYS = ["id", "task", "question", "options", "answer", "videos", "context", "reference", "evidence"]


def test_the_flat_form_round_trips_and_holds_one_episode(tmp_path):
    scripts = generate("all", 2, seed=5)
    path = tmp_path / "s.jsonl"
    write_jsonl(scripts, path)
    lines = path.read_text().splitlines()
    assert all(list(json.loads(line)) == FLAT_KEYS for line in lines)  # the published-compatible layout
    again = list(read_jsonl(path))
    assert [s.model_dump_json() for s in again] == lines  # written back byte for byte
    for script in again:
        assert isinstance(script.episode, Episode) and script.episode is script.episode  # held, not rebuilt
        assert (script.id, script.task, script.answer) == (
            script.episode.id,
            script.episode.task,
            script.episode.answer,
        )
        assert [v.duration for v in script.episode.videos] == [v.duration for v in script.videos]


def test_the_published_script_format_still_reads():
    data = {"videos": {"2": {"duration": 9, "timeline": []}, "1": {"duration": 5, "timeline": [
        {"start": 0, "end": 2, "visual": "a dog runs", "caption": "go"}]}}}  # fmt: skip
    script = Script.from_reference(data, id="r1", task="NC", question="?", options=["A. x", "B. y"], answer="A")
    assert [v.duration for v in script.episode.videos] == [5, 9] and script.videos[0].events[0].speech == "go"


def test_an_episode_that_disagrees_with_the_timelines_is_refused():
    script = generate("PI", 1, seed=0)[0]
    videos = [v.model_copy(update={"duration": v.duration + 1}) for v in script.episode.videos]
    wrong = script.episode.model_copy(update={"videos": videos})
    with pytest.raises(ValidationError, match="the episode's videos do not match the timelines"):
        Script(episode=wrong, videos=script.videos, evidence=script.evidence)
    with pytest.raises(ValidationError, match="do not match"):
        script.with_episode(videos=[VideoRef(index=1, duration=3.0)])
    flat = script.model_dump()
    del flat["answer"]
    with pytest.raises(ValidationError, match="a script needs its 'answer'"):
        Script.model_validate(flat)


def test_question_fields_change_through_the_episode_only():
    script = generate("NC", 1, seed=0)[0]
    renamed = script.with_episode(id="other", answer="C")
    assert (renamed.id, renamed.answer, renamed.episode.id) == ("other", "C", "other")
    assert script.id != "other"  # a copy
    with pytest.raises(ValueError, match=r"\['id'\] belong to the episode: use script.with_episode"):
        script.model_copy(update={"id": "silently ignored otherwise"})
