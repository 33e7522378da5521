"""OpenAIPolicy against a real local HTTP server speaking chat completions (the stand-in for vLLM)."""

import json

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.openai_stub import OpenAIStub
from agentcvr.policies.openai_policy import OpenAIPolicy


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


def policy(stub, mode="tools"):
    return OpenAIPolicy(base_url=stub.base_url, model="stub-model", api_key="k", mode=mode, max_retries=0, timeout=5)


def test_tools_mode_sends_tool_schemas_and_reads_tool_calls(stub, pet_script, simulator):
    stub.reply(tool_calls=[{"name": "observe", "arguments": {"video": 2, "start": 0, "end": 40, "focus": "dog"}}])
    stub.reply(tool_calls=[{"name": "answer", "arguments": {"answer": "B"}}], usage=(120, 9))
    result = Agent(policy(stub), simulator).run(pet_script.episode)

    assert (result.answer, result.failure, result.turns) == ("B", None, 2)
    assert result.steps[0].observation == "[5.0s - 12.0s] a brown dog runs in a park"
    assert (result.steps[1].prompt_tokens, result.steps[1].completion_tokens) == (120, 9)
    first, second = stub.requests
    assert first["model"] == "stub-model" and first["temperature"] == 0
    assert [t["function"]["name"] for t in first["tools"]] == ["observe", "listen", "answer"]
    assert "response_format" not in first
    # the tool result went back as a tool message answering the server's call id
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "[5.0s - 12.0s] a brown dog runs in a park",
    }
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "observe"


def test_tools_mode_accepts_qwen_text_from_servers_without_a_tool_parser(stub, pet_script, simulator):
    stub.reply(content='<tool_call>{"name": "answer", "arguments": {"answer": "B"}}</tool_call>')
    result = Agent(policy(stub), simulator).run(pet_script.episode)
    assert (result.answer, result.failure) == ("B", None)


def test_json_mode_sends_the_protocol_schema(stub, pet_script, simulator):
    target = {"video_index": 2, "start_time": 0, "end_time": 40}
    stub.reply(
        content=json.dumps(
            {"action": "observe", "thought": "look", "params": {"observation_targets": [target], "focus_prompt": "dog"}}
        )
    )
    stub.reply(content=json.dumps({"action": "answer", "thought": "seen", "final_answer": "B"}))
    result = Agent(policy(stub, mode="json"), simulator).run(pet_script.episode)

    assert (result.answer, result.failure, result.tool_calls) == ("B", None, 1)
    request = stub.requests[0]
    assert "tools" not in request
    schema = request["response_format"]["json_schema"]["schema"]
    assert [b["properties"]["action"]["const"] for b in schema["anyOf"]] == ["observe", "get_caption", "answer"]
    assert schema["anyOf"][2]["properties"]["final_answer"]["enum"] == ["A", "B"]  # the episode's two options
    assert '"action": "observe"' in request["messages"][0]["content"]  # the JSON-protocol system prompt
    assert stub.requests[1]["messages"][-1]["content"].startswith("Result of observe on video 2")


def test_a_server_error_ends_the_episode_as_a_recorded_policy_error(stub, pet_script, simulator):
    stub.fail(500)
    result = Agent(policy(stub), simulator, Limits(max_turns=3)).run(pet_script.episode)
    assert result.answer is None and result.failure == "policy_error"
    assert "500" in result.steps[0].error


def test_bad_arguments_fail_early():
    with pytest.raises(ValueError, match="tools.*json"):
        OpenAIPolicy(base_url="http://127.0.0.1:9/v1", model="m", mode="xml")
    with pytest.raises(ValueError, match="model name"):
        OpenAIPolicy(base_url="http://127.0.0.1:9/v1", model="")


def test_a_stopped_run_drops_its_http_call(stub, pet_script):
    import threading
    import time

    from agentcvr import cancel

    answered = threading.Event()

    def slow(request: dict) -> str:
        time.sleep(3)  # a master that takes its time
        answered.set()
        return "never read"

    stub.respond(slow)
    token = cancel.CancelToken()
    threading.Timer(0.3, lambda: token.cancel("timeout")).start()
    with cancel.scope(token), pytest.raises(cancel.Cancelled, match="timeout"):
        policy(stub).act([{"role": "user", "content": "hi"}], pet_script.episode)
    assert not answered.is_set()  # the call was dropped while the server was still working on it
