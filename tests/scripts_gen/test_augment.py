"""LLM augmentation: a rewrite is kept only if it validates and still carries the evidence."""

import json

import pytest

from agentcvr.chat import OpenAIChat
from agentcvr.openai_stub import OpenAIStub
from agentcvr.script import Evidence, Script
from scripts_gen.augment import Augmenter, check_rewrite, editable_view

FACT = "a brown dog runs in a park"


@pytest.fixture
def script(pet_script: Script) -> Script:
    """The shared pet script, with the evidence the augmenter must keep."""
    return pet_script.model_copy(update={"evidence": [Evidence(video=2, start=5, end=12, fact=FACT, focus="dog")]})


def rewrite(script, question="In which clip is a dog seen running?", **edits):
    """A well-behaved LLM reply: richer visuals that keep the evidence sentence, a paraphrased question."""
    view = editable_view(script)
    view.pop("keep_verbatim")
    view["question"] = question
    view["videos"][0]["events"][0]["visual"] = "A fluffy grey cat sleeps curled up on a green sofa."
    view["videos"][1]["events"][0]["visual"] = f"On a sunny lawn, {FACT}, ears flapping."
    view["videos"][1]["events"].append({"start": 20, "end": 30, "visual": "Empty benches under tall trees."})
    for edit in edits.values():
        edit(view)
    return json.dumps(view)


def test_a_valid_rewrite_becomes_a_new_script_and_an_invalid_one_is_counted(script):
    with OpenAIStub() as stub:
        stub.reply(content="Here you go:\n```json\n" + rewrite(script) + "\n```")
        stub.reply(content=rewrite(script, drop=lambda v: v["videos"][1]["events"][0].update(visual="A dog.")))
        augmenter = Augmenter(OpenAIChat("writer", base_url=stub.base_url, max_retries=0))
        good, bad = augmenter(script), augmenter(script)

    assert good.reason == "ok" and good.script is not None
    assert good.script.question == "In which clip is a dog seen running?"
    assert good.script.videos[1].events[0].visual == f"On a sunny lawn, {FACT}, ears flapping."
    assert len(good.script.videos[1].events) == 2  # the filler event was added
    assert (good.script.answer, good.script.options, good.script.evidence) == (
        script.answer,
        script.options,
        script.evidence,
    )
    assert bad.script is None and bad.reason == "evidence_missing" and FACT in bad.detail
    assert (augmenter.accepted, dict(augmenter.rejected)) == (1, {"evidence_missing": 1})
    request = stub.requests[0]
    assert json.loads(request["messages"][1]["content"])["keep_verbatim"] == [FACT]
    assert request["response_format"]["json_schema"]["schema"]["required"] == ["question", "videos"]


def _set(path_value):
    video, event, key, value = path_value
    return lambda view: view["videos"][video]["events"][event].update({key: value})


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (lambda s: "I could not do it.", "not_json"),  # prose only
        (lambda s: json.dumps({"question": "", "videos": []}), "bad_shape"),  # empty question
        (lambda s: rewrite(s, drop=lambda v: v["videos"].pop()), "bad_shape"),  # a video went missing
        (lambda s: rewrite(s, late=_set((1, 0, "end", 99))), "schema"),  # an event past the video's end
        (lambda s: rewrite(s, move=_set((1, 0, "start", 6))), "timeline_changed"),  # evidence moved
        (lambda s: rewrite(s, talk=_set((0, 0, "speech", "hello cat"))), "speech_changed"),  # audio truth altered
        (  # a filler event overlapping an original one
            lambda s: rewrite(
                s, add=lambda v: v["videos"][1]["events"].append({"start": 10, "end": 14, "visual": "x"})
            ),
            "timeline_changed",
        ),
        (  # the answer-bearing fact copied into video 1 would make option A right too
            lambda s: rewrite(
                s, add=lambda v: v["videos"][0]["events"].append({"start": 15, "end": 20, "visual": FACT})
            ),
            "evidence_repeated",
        ),
    ],
)
def test_inconsistent_rewrites_are_rejected_with_a_reason(script, reply, reason):
    result = check_rewrite(script, reply(script))
    assert (result.script, result.reason) == (None, reason), result.detail


def test_the_original_script_is_left_untouched(script):
    before = script.model_dump()
    assert check_rewrite(script, rewrite(script)).script is not None
    assert script.model_dump() == before
