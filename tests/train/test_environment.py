"""The TRL environment: validation like the agent loop, counting for the format reward, limits, truncation."""

from __future__ import annotations

from agentcvr.protocols import Limits
from simulator.script_sim import ScriptSimulator
from train.environment import ANSWER_RECORDED, EPISODE_OVER, CVREnvironment, tool_schemas


def make_env(script, **limits) -> CVREnvironment:
    env = CVREnvironment({script.id: script.episode()}, ScriptSimulator({script.id: script}), Limits(**limits))
    env.reset(episode_id=script.id, prompt=[], task=script.task)
    return env


def test_observe_returns_the_scripted_events_and_counts_the_call(pet_script):
    env = make_env(pet_script)
    assert "dog" in env.observe(video=2, start=0, end=30, focus="dog")
    assert (env.tool_calls, env.invalid_calls) == (1, 0)


def test_invalid_calls_return_an_error_and_are_counted(pet_script):
    env = make_env(pet_script)
    assert env.observe(video=9, start=0, end=5).startswith("Error: Unknown video 9")  # no such video
    assert env.listen(video=1, start=10, end=5).startswith("Error")  # end before start
    assert (env.tool_calls, env.invalid_calls) == (0, 2)


def test_answer_is_recorded_once_and_ends_the_episode(pet_script):
    env = make_env(pet_script)
    assert env.answer(answer="B") == ANSWER_RECORDED
    assert env.observe(video=1, start=0, end=5) == EPISODE_OVER  # nothing after the answer
    assert env.answer(answer="A") == EPISODE_OVER
    assert env.final_answer == "B" and env.invalid_calls == 2


def test_turn_limit_notice_and_truncation(pet_script):
    env = make_env(pet_script, max_turns=2, max_observation_chars=100)
    text = env.observe(video=1, start=0, end=30)
    assert "reached the turn limit" in text  # max_turns - 1 = 1 tool call: the next turn must answer
    assert len(text.split("\n")[0]) <= 100


def test_reset_clears_the_previous_episode(pet_script):
    env = make_env(pet_script)
    env.observe(video=1, start=0, end=5)
    env.answer(answer="A")
    env.reset(episode_id=pet_script.id)
    assert (env.final_answer, env.tool_calls, env.invalid_calls) == (None, 0, 0)


def test_tool_schemas_are_the_three_actions():
    names = [schema["function"]["name"] for schema in tool_schemas()]
    assert names == ["answer", "listen", "observe"]  # TRL's order (inspect.getmembers): the prompt must match it
    observe = tool_schemas()[2]["function"]["parameters"]
    assert observe["required"] == ["video"]  # times may be left out: the whole video
