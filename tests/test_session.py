"""The episode rules (agentcvr/session.py): the forced-answer flag, and one place for the rules of a turn."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcvr.actions import Observe
from agentcvr.agent import Agent
from agentcvr.episode import question_focus
from agentcvr.interfaces import Limits, PolicyOutput
from agentcvr.policies.random_policy import RandomPolicy
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.reading import reference_segment
from agentcvr.session import FORCED_KEY, RECOVERY_KEY, EpisodeRules, forced_turn, is_recovery, wire_messages
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator


def observe(video, start, end):
    call = {"name": "observe", "arguments": json.dumps({"video": video, "start": start, "end": end})}
    return {"tool_calls": [{"id": f"c{start}", "type": "function", "function": call}]}


def test_the_forced_turn_is_an_explicit_flag_not_text(pet_script, simulator):
    policy = ScriptedPolicy([observe(1, 0, 10), observe(1, 10, 20), '{"action": "answer", "final_answer": "B"}'])
    result = Agent(policy, simulator, Limits(max_turns=3)).run(pet_script.episode)
    assert (result.answer, result.forced) == ("B", True)
    flags = [forced_turn(messages) for messages in policy.seen]
    assert flags == [False, False, True]
    # the flag, not the wording: the same text without the flag is not a forced turn
    text_only = [{"role": "user", "content": policy.seen[-1][-1]["content"]}]
    assert not forced_turn(text_only)
    assert FORCED_KEY not in json.dumps(wire_messages(policy.seen[-1]))


def test_random_policy_answers_when_forced_by_the_flag(pet_script, simulator):
    result = Agent(RandomPolicy(seed=1, max_calls=50), simulator, Limits(max_turns=2)).run(pet_script.episode)
    assert result.answer is not None and result.forced and result.tool_calls == 1


def test_rules_judge_and_execute_without_a_graph(pet_script, simulator):
    rules = EpisodeRules(pet_script.episode, simulator, Limits(max_turns=4, max_observation_chars=100))
    judged = rules.judge(PolicyOutput(**observe(2, 0, 40)), turn=0, recoveries=0, seconds=0.0)
    assert judged.pending is not None and judged.answer is None and judged.failure is None
    steps, messages = rules.execute(judged.pending, judged.steps[0], [])
    again, _ = rules.execute(judged.pending, judged.steps[0].model_copy(update={"turn": 1}), steps)
    assert steps[0].observation == messages[0]["content"] and len(steps[0].observation) <= 100
    assert again[0].observation.startswith("(You already made this exact call at turn 0")
    past = pet_script.episode.video(2).duration + 20
    over = rules.judge(PolicyOutput(**observe(2, 5, past)), turn=1, recoveries=0, seconds=0.0)
    cut, _ = rules.execute(over.pending, over.steps[0], steps)
    end = pet_script.episode.video(2).duration
    assert cut[0].observation.startswith(f"(Video 2 ends at {end:g} s, not {past:g}: this is 5-{end:g} s.)\n")
    assert cut[0].arguments["end"] == end
    bad = rules.judge(PolicyOutput(content="hello"), turn=1, recoveries=0, seconds=0.0)
    assert bad.recovered and bad.steps[0].kind == "format_error" and bad.messages[-1]["role"] == "user"
    # the recovery prompt is flagged, as the forced answer is, and the flag never reaches a server
    assert is_recovery(bad.messages[-1]) and not is_recovery({"role": "user", "content": bad.messages[-1]["content"]})
    assert RECOVERY_KEY not in json.dumps(wire_messages(bad.messages))


@pytest.mark.slow  # a fresh interpreter per package, ~3 s
def test_core_imports_no_outer_package():
    """`import agentcvr` and every core module load without serve/, eval/, train/, simulator/ or scripts_gen/."""
    code = (
        "import importlib, pkgutil, sys, agentcvr\n"
        "skip = {'agentcvr.cli', 'agentcvr.components'}\n"  # the composition root
        "for m in pkgutil.walk_packages(agentcvr.__path__, 'agentcvr.'):\n"
        "    if m.name not in skip and m.name != 'agentcvr.policies.gguf':\n"
        "        importlib.import_module(m.name)\n"
        "outer = {'serve', 'eval', 'train', 'simulator', 'scripts_gen'}\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & outer))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def imported_packages(folder: str) -> set[str]:
    """Top-level packages imported anywhere in a source folder (module level or inside functions)."""
    names = set()
    for path in (Path(__file__).parent.parent / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_no_cycle_between_simulator_and_scripts_gen():
    """The script types live in the core (agentcvr/script.py): the simulator reads them without the generator."""
    assert "scripts_gen" not in imported_packages("simulator")


def test_a_look_with_no_focus_searches_for_the_question_then_for_what_earlier_turns_showed():
    """FSA's second look names no focus: the loop ranks video 2's events by the reference segment's lines, so the
    master copies nothing; calls of the same turn do not see each other."""
    script = generate_one("FSA", 0, 10000)
    table = {script.id: script}
    result = Agent(ScanTeacher(table), ScriptSimulator(table), Limits(max_turns=4)).run(script.episode)
    first, second = [step for step in result.steps if step.kind == "tool"]
    assert (first.arguments["start"], first.arguments["end"]) == reference_segment(script.episode)
    assert first.arguments["focus"] == second.arguments["focus"] == ""
    shown = [line.split("] ", 1)[1] for line in first.observation.splitlines()]
    duration = script.videos[1].duration
    searched = Observe(video=2, start=0, end=duration, focus=question_focus(script.episode, found=shown))
    assert second.observation == ScriptSimulator(table).observe(script.episode, searched)[:600]
    assert script.evidence[1].fact in second.observation  # the step the reference segment shows
