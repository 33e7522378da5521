"""`agentcvr ask` on two rendered MP4 files: the `/answer` path from the command line, steps printed as they happen."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.openai_stub import OpenAIStub
from serve.testing import tool_call

pytestmark = pytest.mark.slow  # runs the agent on rendered videos (the session renders them first)


def test_ask_answers_over_two_videos(media, stub):
    args = ["ask", "Which video shows a dog running?", str(media / "cat.mp4"), str(media / "dog.mp4")]
    args += ["--option", "A. Video 1", "--option", "B. Video 2", "--policy", "openai:stub", "--base-url", stub.base_url]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("observe" in line for line in lines) and any("listen" in line for line in lines)
    assert "The dog is very fast today" in result.output
    assert lines[-1].startswith("answer: B")


def test_ask_refuses_a_fake_video_by_its_content(media):
    result = CliRunner().invoke(app, ["ask", "Which video?", str(media / "fake.mp4")], terminal_width=200)
    assert result.exit_code == 2 and "is not a video file" in result.output


def test_ask_prints_bracketed_question_options_and_observations_as_written(media, monkeypatch):
    """Rich reads `[/view]` as a closing tag; the question, the options and a VLM's description of on-screen text
    (the VLM is a real OpenAI-compatible HTTP server that describes the sign as `[/red] EXIT`) print as written."""

    def reply(request: dict) -> str:
        if request["model"] == "vlm-stub":  # the visual agent
            return "[0.0 s - 2.0 s] a sign reads [/red] EXIT"
        done = sum(m["role"] == "assistant" for m in request["messages"])
        if done == 0:
            return tool_call("observe", video=2, start=0, end=4, focus="the sign [/view]", num_frames=2)
        return tool_call("answer", answer="B")

    with OpenAIStub() as stub:
        stub.always(reply)
        monkeypatch.setenv("AGENTCVR_VLM_URL", stub.base_url)
        monkeypatch.setenv("AGENTCVR_VLM_MODEL", "vlm-stub")
        args = ["ask", "Which video shows [/view] text?", str(media / "cat.mp4"), str(media / "dog.mp4")]
        args += ["--option", "A. Video 1 [/red] EXIT", "--option", "B. Video 2 [/view]"]
        args += ["--policy", "openai:stub", "--base-url", stub.base_url]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        master_prompt = next(r for r in stub.requests if r["model"] == "stub")["messages"][1]["content"]
    assert result.exit_code == 0, f"{result.exception!r}\n{result.output}"
    lines = result.output.splitlines()
    assert lines[0].startswith("Which video shows [/view] text?")
    assert "focus='the sign [/view]'" in result.output
    assert "a sign reads [/red] EXIT" in result.output
    assert lines[-1].startswith("answer: B")
    assert "A. Video 1 [/red] EXIT" in master_prompt and "B. Video 2 [/view]" in master_prompt
