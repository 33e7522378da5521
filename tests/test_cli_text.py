"""Text is text: every command's help renders, and what a user, a model or a video wrote prints as written.

Help is walked from the real command tree, so a command added later is checked too. The bracketed strings are the
ones that crashed rich's markup parser (`[/view]` closes no tag; `[/red] EXIT` closes one that is not open).
"""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.script import Evidence, Script, write_jsonl


def _command_paths(command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's name path; groups (typer's own click) hold their subcommands in `commands`."""
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        paths += _command_paths(sub, (*path, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))


def test_the_walk_finds_every_command():
    assert {("run",), ("serve",), ("ask",), ("eval",), ("eval", "crossvid"), ("eval", "report")} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "agentcvr")
def test_every_help_renders(path):
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=120)
    assert result.exit_code == 0, f"{' '.join(path)} --help: {result.exception!r}\n{result.output}"
    assert "Usage:" in result.output


def invoke(args: list[str]):
    """The CLI on a console wide enough that no printed line wraps (rich reads COLUMNS as it prints)."""
    return CliRunner().invoke(app, args, env={"COLUMNS": "400"})


@pytest.fixture
def bracketed(pet_script) -> Script:
    """The pet script with every text bracketed: question, options, on-screen text, speech; the answer stays B."""
    videos = [
        video.model_copy(
            update={
                "events": [
                    event.model_copy(update={"visual": f"{event.visual} [/red] EXIT", "speech": "turn at [/view] now"})
                    for event in video.events
                ]
            }
        )
        for video in pet_script.videos
    ]
    script = pet_script.with_episode(
        question="Which video shows [/view] text?", options=["A. Video 1 [/red] EXIT", "B. Video 2 [/view]"]
    )
    evidence = [
        Evidence(video=2, start=5, end=12, focus="the dog [bold]", fact="a brown dog runs in a park [/red] EXIT"),
        Evidence(video=2, start=5, end=12, tool="listen", fact="turn at [/view] now"),
    ]
    return script.model_copy(update={"videos": videos, "evidence": evidence})


def test_run_and_report_print_bracketed_text_as_written(tmp_path, bracketed):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "expert [bold].jsonl"
    write_jsonl([bracketed], scripts)
    result = invoke(["run", "--policy", "expert", "--scripts", str(scripts), "--out", str(out)])
    assert result.exit_code == 0, f"{result.exception!r}\n{result.output}"
    assert "Which video shows [/view] text?" in result.output  # the panel's title
    assert "focus='the dog [bold]'" in result.output  # the call
    assert "a brown dog runs in a park [/red] EXIT" in result.output and "turn at [/view] now" in result.output
    assert "answer='B'" in result.output
    report = invoke(["report", str(out)])
    assert report.exit_code == 0, f"{report.exception!r}\n{report.output}"
    assert "expert [bold]" in report.output  # the run's name is its file's


def test_random_run_prints_its_trace(tmp_path, bracketed):
    scripts = tmp_path / "scripts.jsonl"
    write_jsonl([bracketed], scripts)
    result = invoke(["run", "--policy", "random", "--scripts", str(scripts)])
    assert result.exit_code == 0, f"{result.exception!r}\n{result.output}"
    assert "Which video shows [/view] text?" in result.output and "random on sim (1 episodes)" in result.output


def test_an_error_naming_a_bracketed_path_prints_it(tmp_path):
    missing = tmp_path / "[/red] gone.jsonl"
    result = invoke(["run", "--policy", "expert", "--scripts", str(missing)])
    assert result.exit_code == 2 and f"scripts file not found: {missing}" in result.output
