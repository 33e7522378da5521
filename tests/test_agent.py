"""The LangGraph loop driven by ScriptedPolicy against the real simulator."""

import json
import math

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.scripted import ScriptedPolicy


def tool_calls(name, args):
    return {
        "tool_calls": [
            {"id": f"id-{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ]
    }


def qwen(name, args):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"


def published(name, args):
    if name == "answer":
        return json.dumps({"action": "answer", "thought": "done", "final_answer": args["answer"]})
    if name == "listen":
        return json.dumps(
            {
                "action": "get_caption",
                "params": {"video_index": args["video"], "start_time": args["start"], "end_time": args["end"]},
            }
        )
    target = {"video_index": args["video"], "start_time": args["start"], "end_time": args["end"]}
    return json.dumps({"action": "observe", "params": {"observation_targets": [target], "focus_prompt": args["focus"]}})


@pytest.mark.parametrize(("fmt", "protocol"), [(tool_calls, "tools"), (qwen, "tools"), (published, "json")])
def test_three_formats_drive_the_graph_to_an_answer(fmt, protocol, pet_script, simulator):
    policy = ScriptedPolicy(
        [
            fmt("observe", {"video": 2, "start": 0, "end": 40, "focus": "dog"}),
            fmt("listen", {"video": 1, "start": 0, "end": 30}),
            fmt("answer", {"answer": "B"}),
        ],
        protocol=protocol,
    )
    result = Agent(policy, simulator).run(pet_script.episode)
    assert (result.answer, result.failure, result.turns, result.tool_calls) == ("B", None, 3, 2)
    assert result.steps[0].observation == "[5.0s - 12.0s] a brown dog runs in a park"
    assert result.steps[1].observation == "[0.0 - 10.0]: good morning kitty"
    # the observations went back to the policy in the conversation
    last_messages = policy.seen[-1]
    assert any("good morning kitty" in m["content"] for m in last_messages if m["role"] in ("tool", "user"))
    assert all(step.tool_seconds >= 0 for step in result.steps)


def test_the_trace_keeps_each_turns_thought_once(pet_script, simulator):
    target = {"video_index": 1, "start_time": 0, "end_time": 30}
    observe_both = {"observation_targets": [target, {**target, "video_index": 2}], "focus_prompt": "pets"}
    policy = ScriptedPolicy(
        [
            json.dumps({"action": "observe", "thought": "look at both", "params": observe_both}),
            published("answer", {"answer": "B"}),
        ],
        protocol="json",
    )
    result = Agent(policy, simulator).run(pet_script.episode)
    assert [(step.tool, step.thought) for step in result.steps] == [
        ("observe", "look at both"),
        ("observe", None),  # the same turn's second call
        ("answer", "done"),
    ]


def test_openai_tool_results_carry_the_call_id(pet_script, simulator):
    policy = ScriptedPolicy(
        [tool_calls("listen", {"video": 1, "start": 0, "end": 30}), tool_calls("answer", {"answer": "A"})]
    )
    Agent(policy, simulator).run(pet_script.episode)
    assistant, tool = policy.seen[-1][-2:]
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] == "id-listen"


def test_forced_answer_at_the_turn_limit(pet_script, simulator):
    looping = [qwen("listen", {"video": 1, "start": 0, "end": 30})] * 3 + [qwen("answer", {"answer": "A"})]
    policy = ScriptedPolicy(looping)
    result = Agent(policy, simulator, Limits(max_turns=4)).run(pet_script.episode)
    assert (result.answer, result.turns, result.forced) == ("A", 4, True)
    assert "turn limit" in policy.seen[-1][-1]["content"]


def test_no_answer_at_the_turn_limit_is_a_recorded_failure(pet_script, simulator):
    policy = ScriptedPolicy([qwen("listen", {"video": 1, "start": 0, "end": 30})] * 3)
    result = Agent(policy, simulator, Limits(max_turns=3)).run(pet_script.episode)
    assert (result.answer, result.failure, result.turns) == (None, "turn_limit", 3)


def test_recovery_reprompts_then_succeeds(pet_script, simulator):
    policy = ScriptedPolicy(["not json", '{"action": "answer"', qwen("answer", {"answer": "B"})], protocol="json")
    result = Agent(policy, simulator).run(pet_script.episode)
    assert result.answer == "B" and result.format_errors == 2
    assert "not a valid action" in policy.seen[-1][-1]["content"]
    assert result.valid_action_rate == pytest.approx(1 / 3)


def test_recoveries_are_bounded(pet_script, simulator):
    policy = ScriptedPolicy(["?"] * 10)
    result = Agent(policy, simulator, Limits(max_recoveries=3)).run(pet_script.episode)
    assert result.answer is None and result.failure.startswith("format_error")
    assert result.turns == 4  # the first try and 3 re-prompts


class Broken:
    def observe(self, episode, action):
        raise TimeoutError("visual agent timed out after 30 s")

    def listen(self, episode, action):
        return "No speech detected."


def test_perception_failures_are_told_to_the_model_and_recorded(pet_script):
    policy = ScriptedPolicy(
        [qwen("observe", {"video": 1, "start": 0, "end": 9, "focus": ""}), qwen("answer", {"answer": "A"})]
    )
    result = Agent(policy, Broken()).run(pet_script.episode)
    assert result.answer == "A"
    assert result.steps[0].kind == "tool_error" and "timed out" in result.steps[0].error
    assert (result.tool_errors, result.tool_calls) == (1, 1)
    assert "timed out" in policy.seen[-1][-1]["content"]


def test_policy_exceptions_end_the_episode_as_a_failure(pet_script, simulator):
    result = Agent(ScriptedPolicy([]), simulator).run(pet_script.episode)
    assert result.failure == "policy_error" and "ran out" in result.steps[0].error


MALFORMED = [
    pytest.param('{"action": "observe", "params": {"observation_targets": [{"video_index": 1', id="truncated-json"),
    pytest.param('{"action": "teleport"}', id="wrong-tool"),
    pytest.param('{"action": "observe", "params": {}}', id="missing-targets"),
    pytest.param(qwen("observe", {"start": 0, "end": 4}), id="missing-video"),
    pytest.param(qwen("observe", {"video": 1, "start": 12, "end": 12}), id="empty-interval"),
    pytest.param(
        '<tool_call>{"name": "listen", "arguments": {"video": 1, "start": NaN, "end": 3}}</tool_call>', id="nan"
    ),
    pytest.param(qwen("listen", {"video": 1, "start": -5, "end": 3}), id="negative-time"),
    pytest.param(qwen("listen", {"video": 9, "start": 0, "end": 3}), id="unknown-video"),
    pytest.param(qwen("listen", {"video": 1, "start": 50, "end": 60}), id="outside-video"),
    pytest.param(
        '{"action": "answer", "final_answer": "A"}{"action": "answer", "final_answer": "B"}', id="two-objects"
    ),
    pytest.param("The answer is clearly B because the dog runs.", id="prose-only"),
    pytest.param("", id="empty"),
    pytest.param({"tool_calls": [{"function": {"name": "observe", "arguments": "{'video': 1}"}}]}, id="python-dict"),
    pytest.param({"tool_calls": [{"function": "observe"}]}, id="function-not-an-object"),
    pytest.param(
        json.dumps(
            {
                "action": "observe",
                "params": {"observation_targets": [{"video_index": 1, "start_time": math.inf, "end_time": 1e309}]},
            }
        ),
        id="infinite",
    ),
]


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_output_recovers(bad, pet_script, simulator):
    policy = ScriptedPolicy([bad, qwen("answer", {"answer": "B"})])
    result = Agent(policy, simulator).run(pet_script.episode)
    assert result.answer == "B" and result.format_errors == 1 and result.steps[0].kind == "format_error"


@pytest.mark.parametrize("bad", MALFORMED)
def test_persistently_malformed_output_is_a_recorded_failure(bad, pet_script, simulator):
    result = Agent(ScriptedPolicy([bad] * 4), simulator).run(pet_script.episode)
    assert result.answer is None and result.failure.startswith("format_error") and result.format_errors == 4


def test_policy_never_sees_the_ground_truth(pet_script, simulator):
    policy = ScriptedPolicy([qwen("answer", {"answer": "A"})])
    Agent(policy, simulator).run(pet_script.episode)
    text = json.dumps(policy.seen[0])
    assert "dog runs" not in text and "kitty" not in text  # no script content before a tool call


def test_a_repeated_call_is_answered_with_a_note(pet_script, simulator):
    same = qwen("listen", {"video": 1, "start": 0, "end": 30})
    result = Agent(ScriptedPolicy([same, same, qwen("answer", {"answer": "A"})]), simulator).run(pet_script.episode)
    assert not result.steps[0].observation.startswith("(You already")
    assert result.steps[1].observation.startswith("(You already made this exact call at turn 0")
    assert result.steps[1].observation.endswith("good morning kitty")
