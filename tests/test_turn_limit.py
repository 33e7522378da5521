"""`--max-turns N` means N policy turns, the answer turn included: the last is a forced answer, so 1 answers at once.

Real policies (expert, scan teacher, random) drive the real graph against the real simulator; `agentcvr run` says
the same in its help and in its table.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentcvr.agent import Agent
from agentcvr.cli import app
from agentcvr.components import make_policy
from agentcvr.interfaces import MAX_TURNS_HELP, Limits
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.script import write_jsonl
from agentcvr.session import forced_turn
from scripts_gen.generate import generate


@pytest.mark.parametrize("name", ["expert", "scan", "random"])
def test_one_turn_is_the_forced_answer(name, pet_script, simulator):
    policy = make_policy(name, {pet_script.id: pet_script})
    result = Agent(policy, simulator, Limits(max_turns=1)).run(pet_script.episode)
    assert (result.turns, result.forced, result.failure, result.tool_calls) == (1, True, None, 0)
    assert result.answer in {"A", "B"} and [step.kind for step in result.steps] == ["answer"]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_the_answer_comes_on_the_last_allowed_turn(limit, pet_script, simulator):
    observe = '<tool_call>{"name": "observe", "arguments": {"video": 1, "start": 0, "end": 10}}</tool_call>'
    answer = '<tool_call>{"name": "answer", "arguments": {"answer": "B"}}</tool_call>'
    policy = ScriptedPolicy([observe] * (limit - 1) + [answer])
    result = Agent(policy, simulator, Limits(max_turns=limit)).run(pet_script.episode)
    assert (result.answer, result.turns, result.tool_calls) == ("B", limit, limit - 1)
    assert [forced_turn(messages) for messages in policy.seen] == [False] * (limit - 1) + [True]


def test_a_tool_call_on_the_only_turn_fails_without_running_it(pet_script, simulator):
    observe = '<tool_call>{"name": "observe", "arguments": {"video": 1, "start": 0, "end": 10}}</tool_call>'
    result = Agent(ScriptedPolicy([observe]), simulator, Limits(max_turns=1)).run(pet_script.episode)
    assert (result.answer, result.failure, result.turns, result.tool_calls) == (None, "turn_limit", 1, 0)
    assert "called observe on the last allowed turn, which must answer" in result.steps[0].error


def test_run_with_one_turn_answers_every_episode(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "out.jsonl"
    write_jsonl(generate("all", 1, seed=3), scripts)
    args = [
        "run",
        "--policy",
        "expert",
        "--scripts",
        str(scripts),
        "--max-turns",
        "1",
        "--no-traces",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    records = [json.loads(line)["result"] for line in out.read_text().splitlines()]
    assert len(records) == 10
    assert all(r["answer"] is not None and r["turns"] == 1 and r["forced"] for r in records)


def test_every_max_turns_option_says_the_same():
    assert "answer turn included" in MAX_TURNS_HELP and "1 answers at once" in MAX_TURNS_HELP
    for command in (["run"], ["ask"], ["eval", "crossvid"], ["eval", "synth"], ["eval", "fidelity"]):
        shown = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400"}, terminal_width=400).output
        assert "answer turn included" in " ".join(shown.split()), command
