"""The VLM client against a real local HTTP server speaking the OpenAI chat protocol (tests/openai_stub.py)."""

from __future__ import annotations

import base64
import io

import openai
import pytest
from PIL import Image

from agentcvr.openai_stub import OpenAIStub
from agentcvr.perception.frames import FrameSampler
from agentcvr.perception.vlm import SYSTEM, VLMClient, VLMConfig, build_messages, preamble


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.fixture(scope="module")
def targets(rendered):
    """4 frames of video 2 (5-12 s) and 2 of the clip video 4 (3-10 s, 25 s into its file)."""
    _, episode, _ = rendered
    sampler = FrameSampler()
    dog = sampler.sample(episode.videos[1].path, 5.0, 12.0, 4)
    kite = sampler.sample(episode.videos[3].path, 3.0, 10.0, 2, offset=episode.videos[3].offset)
    return [(2, dog), (4, kite)]


@pytest.mark.slow  # renders a video first (~4 s, once per module)
def test_the_request_carries_the_frames_the_preamble_and_the_focus(stub, targets):
    stub.reply(content="[5.0 s - 12.0 s] A brown dog runs across a park.")
    client = VLMClient(VLMConfig(base_url=stub.base_url, model="Qwen/Qwen2.5-VL-7B-Instruct"))
    answer = client.describe(targets, focus="what the dog does")
    assert answer == "[5.0 s - 12.0 s] A brown dog runs across a park."

    (request,) = stub.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "Qwen/Qwen2.5-VL-7B-Instruct" and request["temperature"] == 0.0
    system, user = request["messages"]
    assert system == {"role": "system", "content": SYSTEM}
    parts = user["content"]
    assert [p["type"] for p in parts] == ["text"] + ["image_url"] * 6 + ["text"]
    intro, focus = parts[0]["text"], parts[-1]["text"]
    assert "You are given 6 frames sampled uniformly from 2 video interval(s)" in intro
    assert "- Frames 1-4: video 2, 5.0 s to 12.0 s (frame times: 5.8, 7.6, 9.3, 11.1 s)." in intro
    assert "- Frames 5-6: video 4, 3.0 s to 10.0 s (frame times: 4.7, 8.2 s)." in intro  # clip times
    assert "focusing on: what the dog does" in focus and "No significant action observed." in focus
    for part in parts[1:-1]:
        url = part["image_url"]["url"]
        assert url.startswith("data:image/jpeg;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert image.format == "JPEG" and max(image.size) == 360


def test_preamble_numbers_a_single_frame():
    from agentcvr.perception.frames import Frames

    one = Frames(images=[], times=(3.0,), start=2.0, end=4.0, path="x")
    assert "- Frame 1: video 1, 2.0 s to 4.0 s (frame times: 3.0 s)." in preamble([(1, one)])


@pytest.mark.slow  # renders a video first (~4 s, once per module)
def test_no_focus_means_no_focus_clause(targets):
    messages = build_messages(targets[:1])
    assert "focusing on" not in messages[1]["content"][-1]["text"]


@pytest.mark.slow  # renders a video first (~4 s, once per module)
def test_an_empty_reply_is_an_error(stub, targets):
    stub.reply(content="")
    client = VLMClient(VLMConfig(base_url=stub.base_url, model="m"))
    with pytest.raises(RuntimeError, match="empty description"):
        client.describe(targets[:1])


@pytest.mark.slow  # renders a video first (~4 s, once per module)
def test_a_server_error_surfaces(stub, targets):
    stub.fail(500)
    client = VLMClient(VLMConfig(base_url=stub.base_url, model="m", max_retries=0))
    with pytest.raises(openai.InternalServerError):
        client.describe(targets[:1])
