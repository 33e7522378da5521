"""RealPerception in the real LangGraph loop: rendered MP4s -> decord -> OCR / faster-whisper -> the trace."""

from __future__ import annotations

import json

import pytest

from agentcvr.actions import Observe
from agentcvr.agent import Agent
from agentcvr.components import make_perception
from agentcvr.openai_stub import OpenAIStub
from agentcvr.perception.media import PerceptionTimeout, VideoNotFound
from agentcvr.perception.real import RealPerception
from agentcvr.policies.scripted import ScriptedPolicy
from scripts_gen.known_facts import FACTS
from tests.rendered import needs_tools

pytestmark = [pytest.mark.slow, needs_tools]


def call(name, **arguments):
    return {
        "tool_calls": [
            {"id": f"c-{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ]
    }


@pytest.fixture(scope="module")
def perception():
    with RealPerception() as real:
        yield real


def test_the_agent_sees_scripted_facts_through_real_files(rendered, perception):
    _, episode, _ = rendered
    policy = ScriptedPolicy(
        [
            call("observe", video=2, start=0, end=40, focus="the dog"),
            call("listen", video=2, start=0, end=40),
            call("observe", video=4, start=0, end=15, focus="the sky"),
            call("answer", answer="B"),
        ]
    )
    result = Agent(policy, perception).run(episode)
    assert result.answer == "B" and result.failure is None
    dog, speech, kite = (step.observation for step in result.steps[:3])
    assert dog.startswith(f'[5.0s - 12.0s] Text on screen: "{FACTS["dog"]}"'), dog
    assert speech.startswith("[") and "fast today" in speech.lower(), speech
    assert kite.startswith(f'[3.0s - 10.0s] Text on screen: "{FACTS["kite"]}"'), kite  # clip time, not file time
    assert all(step.tool_seconds > 0 for step in result.steps[:3])
    # the tool messages the policy saw are these observations
    tool_messages = [m["content"] for m in policy.seen[-1] if m["role"] == "tool"]
    assert tool_messages == [dog, speech, kite]


def test_failures_are_recorded_in_the_trace_and_told_to_the_model(rendered, perception, silent_video):
    _, episode, _ = rendered
    broken = episode.model_copy(deep=True)
    broken.videos[0].path = "/nonexistent/cat.mp4"
    broken.videos[1].path = str(silent_video)
    policy = ScriptedPolicy(
        [
            call("observe", video=1, start=0, end=10),
            call("listen", video=2, start=0, end=10),
            call("answer", answer="A"),
        ]
    )
    result = Agent(policy, perception).run(broken)
    missing, silent = result.steps[:2]
    assert missing.kind == "tool_error" and "VideoNotFound" in missing.error and "/nonexistent/cat.mp4" in missing.error
    assert silent.kind == "tool_error" and "NoAudioTrack" in silent.error
    assert missing.observation.startswith("Error: ") and result.answer == "A"
    assert [c.error is not None for c in list(perception.calls)[-2:]] == [True, True]


def test_a_call_past_its_timeout_raises(rendered):
    _, episode, _ = rendered
    with RealPerception(observe_timeout=0.001) as real, pytest.raises(PerceptionTimeout, match="longer than"):
        real.observe(episode, Observe(video=1, start=0, end=30, num_frames=32))


def test_repeated_observations_are_cached(rendered, perception):
    _, episode, _ = rendered
    action = Observe(video=1, start=0, end=30, focus="cat")
    first = perception.observe(episode, action)
    assert perception.observe(episode, action) == first
    assert perception.calls[-1].seconds < 0.05
    assert FACTS["cat"] in first and FACTS["milk"] in first


def test_relative_paths_resolve_under_video_root(rendered):
    _, episode, folder = rendered
    relative = episode.model_copy(deep=True)
    relative.videos[1].path = "facts-1/video_2.mp4"
    with RealPerception(video_root=str(folder)) as real:
        assert FACTS["dog"] in real.observe(relative, Observe(video=2, start=4, end=13, num_frames=4))
    with RealPerception() as real, pytest.raises(VideoNotFound, match="facts-1/video_2.mp4"):
        real.observe(relative, Observe(video=2, start=4, end=13, num_frames=4))


def test_the_vlm_backend_in_the_loop(rendered):
    _, episode, _ = rendered
    with OpenAIStub() as stub:
        stub.reply(content="[5.0 s - 12.0 s] A dog runs.")
        perception = make_perception("real", vlm={"base_url": stub.base_url, "model": "qwen-vl"}, visual="vlm")
        policy = ScriptedPolicy([call("observe", video=2, start=5, end=12, num_frames=8), call("answer", answer="B")])
        result = Agent(policy, perception).run(episode)
        perception.close()
    assert result.steps[0].observation == "[5.0 s - 12.0 s] A dog runs."
    parts = stub.requests[0]["messages"][1]["content"]
    assert sum(p["type"] == "image_url" for p in parts) == 8
    assert "Frames 1-8: video 2, 5.0 s to 12.0 s" in parts[0]["text"]


def test_vlm_needs_an_endpoint():
    with pytest.raises(ValueError, match="base_url"):
        RealPerception(visual="vlm")
