"""Action models and the tool schemas generated from them."""

import pytest
from pydantic import ValidationError

from agentcvr.actions import Answer, Listen, Observe, tool_schemas


def test_schemas_are_generated_from_the_models():
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas()}
    assert set(schemas) == {"observe", "listen", "answer"}
    observe = schemas["observe"]["parameters"]
    assert observe["required"] == ["video"]  # times may be left out: the whole video
    assert observe["properties"]["start"] == {
        "type": "number",
        "minimum": 0,
        "description": "Seconds from the start of the video; omit for 0.",
    }
    assert set(observe["properties"]) == {"video", "start", "end", "focus", "num_frames"}
    assert "tool" not in observe["properties"]  # the tag is ours, not an argument
    assert schemas["answer"]["parameters"]["required"] == ["answer"]
    assert schemas["listen"]["description"].startswith("Ask the audio agent")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"video": 1, "start": 5, "end": 5}, "empty interval"),
        ({"video": 1, "start": 9, "end": 2}, "end before start"),
        ({"video": 0, "start": 0, "end": 2}, "videos count from 1"),
        ({"video": 1, "start": -1, "end": 2}, "negative time"),
        ({"video": 1, "start": 0, "end": float("nan")}, "NaN time"),
        ({"video": 1, "start": 0, "end": float("inf")}, "infinite time"),
        ({"video": 1, "start": 0, "end": 2, "speed": 2}, "unknown argument"),
    ],
)
def test_invalid_intervals_are_rejected(args, reason):
    with pytest.raises(ValidationError):
        Listen(**args)


def test_answer_accepts_published_interval_lists():
    assert Answer(answer=[53.2, 57.8]).answer == "53.2,57.8"
    assert Answer(answer=3).answer == "3"


def test_observe_defaults():
    action = Observe(video=2, start=0, end=10)
    assert (action.focus, action.num_frames, action.tool) == ("", 16, "observe")
