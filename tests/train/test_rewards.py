"""Rewards as tables, one reason per row."""

from __future__ import annotations

import pytest

from agentcvr.protocols import Limits
from scripts_gen.schema import Event, Script, VideoScript
from simulator.script_sim import ScriptSimulator
from train.environment import CVREnvironment
from train.rewards import Correctness, FormatBonus

TOOL_ERROR = {"role": "tool", "name": "observe", "content": "{'error': 'observe() got an unexpected keyword'}"}
MALFORMED = {"role": "assistant", "content": '<tool_call>\n{"name": "observe", "arguments": {"video": 1,'}


def play(script: Script, calls: list[tuple[str, dict]]) -> CVREnvironment:
    env = CVREnvironment({script.id: script.episode()}, ScriptSimulator({script.id: script}), Limits())
    env.reset(episode_id=script.id)
    for name, arguments in calls:
        getattr(env, name)(**arguments)
    return env


LOOK = ("observe", {"video": 2, "start": 0, "end": 30})


@pytest.mark.parametrize(
    ("calls", "extra", "correct", "bonus"),
    [
        ([LOOK, ("answer", {"answer": "B"})], [], 1.0, 0.1),  # looked, answered right, all valid
        ([LOOK, ("answer", {"answer": "A"})], [], 0.0, 0.1),  # wrong answer still earns the format bonus
        ([("answer", {"answer": "B"})], [], 1.0, 0.0),  # no tool call: no bonus (the published code paid it)
        (
            [LOOK, ("observe", {"video": 7, "start": 0, "end": 5}), ("answer", {"answer": "B"})],
            [],
            1.0,
            0.0,
        ),  # bad call
        ([LOOK], [], 0.0, 0.0),  # never answered
        ([LOOK, ("answer", {"answer": "B"})], [TOOL_ERROR], 1.0, 0.0),  # a call TRL could not even dispatch
        ([LOOK, ("answer", {"answer": "B"})], [MALFORMED], 1.0, 0.0),  # an unparseable <tool_call>
        ([LOOK, ("answer", {"answer": " b. "})], [], 1.0, 0.1),  # strict scoring normalizes the letter
    ],
)
def test_correctness_and_format(pet_script, calls, extra, correct, bonus):
    env = play(pet_script, calls)
    completion = [{"role": "assistant", "content": ""}, *extra]
    logged = {}
    assert Correctness()([completion], environments=[env], log_metric=logged.__setitem__) == [correct]
    assert FormatBonus(0.1)([completion], environments=[env]) == [bonus]
    assert logged["episode/tool_calls"] == env.tool_calls


def fsa_script() -> Script:
    videos = [VideoScript(index=i, duration=100, events=[Event(start=0, end=50, visual="x")]) for i in (1, 2)]
    return Script(id="fsa", task="FSA", question="?", answer=[10, 20], videos=videos)


@pytest.mark.parametrize(
    ("answer", "dense", "expected"),
    [
        ("10,20", False, 1.0),  # exact interval
        ("10,30", False, 0.0),  # exact form by default: no partial credit
        ("10,30", True, 0.5),  # dense: IoU 10/20
        ("garbage", True, 0.0),  # unparseable interval
    ],
)
def test_dense_correctness_is_optional(answer, dense, expected):
    env = play(fsa_script(), [("answer", {"answer": answer})])
    assert Correctness(dense=dense)([[]], environments=[env]) == [pytest.approx(expected)]
