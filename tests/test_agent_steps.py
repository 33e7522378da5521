"""`Agent.run(on_step=...)`: each step is handed over once, complete, as soon as it is recorded; raising from the
callback stops the run between steps (how the server streams and cancels runs)."""

import json

import pytest

from agentcvr.agent import Agent
from agentcvr.policies.scripted import ScriptedPolicy


def qwen(name, args):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"


def policy():
    return ScriptedPolicy(
        [
            "not an action",  # a format error, recovered from
            qwen("observe", {"video": 2, "start": 0, "end": 40, "focus": "dog"})
            + qwen("listen", {"video": 1, "start": 0, "end": 30}),  # two calls in one turn: two steps
            qwen("answer", {"answer": "B"}),
        ],
        protocol="tools",
    )


def test_on_step_sees_every_step_once_and_complete(pet_script, simulator):
    seen = []
    result = Agent(policy(), simulator).run(pet_script.episode, on_step=seen.append)
    assert seen == result.steps
    assert [s.kind for s in seen] == ["format_error", "tool", "tool", "answer"]
    assert seen[1].observation == "[5.0s - 12.0s] a brown dog runs in a park"  # filled in, not the placeholder


def test_raising_from_on_step_stops_the_run(pet_script, simulator):
    class Stop(Exception):
        pass

    scripted, seen = policy(), []

    def stop_after_two(step):
        seen.append(step)
        if len(seen) == 2:
            raise Stop

    with pytest.raises(Stop):
        Agent(scripted, simulator).run(pet_script.episode, on_step=stop_after_two)
    assert len(scripted.seen) == 2  # the answer turn never ran
