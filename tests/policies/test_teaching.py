"""The teachers in both action formats, through the real loop and simulator: in the published JSON protocol they make
the same looks, get the same observations and give the same answers as with tool calls, so a JSON-protocol warm start
imitates the same behaviour."""

from __future__ import annotations

import json

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.parsing import ParsedTurn, parse_turn
from agentcvr.policies.expert import ExpertPolicy
from agentcvr.policies.json_protocol import scan_turn
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.teaching import json_turn, looks, next_calls, write_turn
from agentcvr.tasks import TASK_ORDER
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator

TEACHERS = {"expert": ExpertPolicy, "scan": ScanTeacher}


@pytest.mark.parametrize("teacher", TEACHERS)
@pytest.mark.parametrize("task", TASK_ORDER)
def test_both_protocols_look_and_answer_alike(teacher, task):
    script = generate_one(task, 3, 10000)
    table = {script.id: script}
    limits = Limits(max_turns=12, max_observation_chars=600)
    runs = {}
    for protocol in ("tools", "json"):
        policy = TEACHERS[teacher](table, protocol=protocol)
        runs[protocol] = Agent(policy, ScriptSimulator(table), limits).converse(script.episode)
    (tools, _), (published, messages) = runs["tools"], runs["json"]
    assert published.answer == tools.answer and published.answer is not None and published.failure is None
    looked = [(s.tool, s.arguments, s.observation) for s in published.steps if s.kind == "tool"]
    assert looked == [(s.tool, s.arguments, s.observation) for s in tools.steps if s.kind == "tool"]
    replies = [m for m in messages if m["role"] == "assistant"]
    assert all("tool_calls" not in m for m in replies)  # one JSON object per turn, in the text
    assert all(parse_turn(m["content"], None, script.episode).format == "json" for m in replies)


def test_looks_pair_each_call_with_its_observation_in_both_formats():
    script = generate_one("PI", 1, 10000)
    episode = script.episode
    table = {script.id: script}
    for protocol in ("tools", "json"):
        result, messages = Agent(ScanTeacher(table, protocol=protocol), ScriptSimulator(table), Limits()).converse(
            episode
        )
        found = looks(messages, episode)
        steps = [s for s in result.steps if s.kind == "tool"]
        assert [look.action.tool for look in found] == [s.tool for s in steps]
        # the message as the policy saw it: the observation (with a "Result of ..." header in the JSON protocol)
        assert all(look.observation.endswith(s.observation) for look, s in zip(found, steps, strict=True))


def test_loop_prompts_are_not_observations():
    script = generate_one("CC", 0, 10000)
    episode = script.episode
    call = json.dumps({"action": "observe", "params": {"observation_targets": [{"video_index": 1}]}})
    messages = [
        {"role": "assistant", "content": call},
        {"role": "user", "content": "Result of observe on video 1:\nA cook slices onions.", "recovery": True},
        {"role": "user", "content": "Result of observe on video 1:\nA cook slices onions."},
    ]
    assert [look.observation for look in looks(messages, episode)] == [messages[2]["content"]]
    bad = [{"role": "assistant", "content": "no json here"}, {"role": "user", "content": "Please reply in JSON."}]
    assert looks(bad, episode) == []


def test_a_planned_turn_resumes_where_the_conversation_stands():
    turns = [[("observe", {"video": 1}), ("observe", {"video": 2})], [("listen", {"video": 1})]]
    assert next_calls(turns, 0) == turns[0]
    assert next_calls(turns, 1) == [("observe", {"video": 2})]  # one target went out alone
    assert next_calls(turns, 2) == turns[1]
    assert next_calls(turns, 3) == []


def test_json_turns_group_observes_under_one_focus_only():
    calls = [
        ("observe", {"video": 1, "focus": "knife"}),
        ("observe", {"video": 2, "start": 5, "end": 9, "focus": "knife"}),
        ("observe", {"video": 3, "focus": "pan"}),
    ]
    turn = json_turn(calls)
    assert turn == {
        "action": "observe",
        "params": {
            "observation_targets": [{"video_index": 1}, {"video_index": 2, "start_time": 5, "end_time": 9}],
            "focus_prompt": "knife",
        },
    }
    assert json_turn([("listen", {"video": 2, "start": 0, "end": 4})]) == {
        "action": "get_caption",
        "params": {"video_index": 2, "start_time": 0, "end_time": 4},
    }
    listens = [("listen", {"video": 1}), ("listen", {"video": 2, "start": 3, "end": 8}), ("observe", {"video": 1})]
    assert json_turn(listens) == {
        "action": "get_caption",
        "params": {"caption_targets": [{"video_index": 1}, {"video_index": 2, "start_time": 3, "end_time": 8}]},
    }
    assert json_turn([("answer", {"answer": "B"})], thought="seen it") == {
        "action": "answer",
        "thought": "seen it",
        "final_answer": "B",
    }
    with pytest.raises(ValueError, match="unknown protocol 'xml'"):
        write_turn(calls, "xml", "c")  # type: ignore[arg-type]


def test_the_gguf_scan_turn_is_the_scan_teachers_first_turn():
    script = generate_one("MSR", 0, 10000)
    episode = script.episode
    taught = ScanTeacher({script.id: script}, protocol="json").act([], episode).content
    assert taught == scan_turn(episode)
    assert isinstance(parse_turn(taught, None, episode), ParsedTurn)
