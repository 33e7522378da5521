"""`agentcvr ask` on two rendered MP4 files: the `/answer` path from the command line, steps printed as they happen."""

from __future__ import annotations

from typer.testing import CliRunner

from agentcvr.cli import app


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
