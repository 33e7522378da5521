"""`agentcvr run`: one word per idea, `--perception` names what the tools see through (as serve's
AGENTCVR_PERCEPTION does); `--policy scan` is the scan teacher, built by the composition root."""

import json

from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.script import write_jsonl
from scripts_gen.generate import generate


def test_run_takes_the_perception_by_name_and_resumes(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "traces.jsonl"
    write_jsonl([*generate("NC", 2, seed=5), *generate("PI", 1, seed=5)], scripts)
    args = ["run", "--policy", "scan", "--perception", "sim", "--scripts", str(scripts), "--no-traces"]
    first = CliRunner().invoke(app, [*args, "--task", "NC", "--out", str(out)], terminal_width=200)
    assert first.exit_code == 0, first.output
    assert "scan on sim (2 episodes)" in first.output
    again = CliRunner().invoke(app, [*args, "--out", str(out)], terminal_width=200)
    assert again.exit_code == 0 and "scan on sim (3 episodes)" in again.output
    assert [json.loads(line)["result"]["task"] for line in out.read_text().splitlines()] == ["NC", "NC", "PI"]


def test_an_unknown_perception_fails_naming_the_valid_ones(tmp_path):
    scripts = tmp_path / "scripts.jsonl"
    write_jsonl(generate("NC", 1, seed=5), scripts)
    result = CliRunner().invoke(
        app, ["run", "--policy", "expert", "--perception", "video", "--scripts", str(scripts)], terminal_width=200
    )
    assert result.exit_code == 2 and "unknown perception 'video'" in result.output and "llm-sim" in result.output
