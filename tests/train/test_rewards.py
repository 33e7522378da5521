"""Rewards as tables, one reason per row: episodes run through the real agent and simulator, scored from the trace."""

from __future__ import annotations

import json

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.script import Event, Script, VideoScript
from simulator.script_sim import ScriptSimulator
from train.rewards import Correctness, EvidenceReward, FormatBonus, TurnCost


def call(name: str, arguments: dict) -> dict:
    return {
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]
    }


def play(script: Script, outputs: list) -> tuple:
    episode = script.episode
    policy = ScriptedPolicy(outputs)
    result = Agent(policy, ScriptSimulator({script.id: script}), Limits(max_turns=4)).run(episode)
    return result, episode


LOOK = call("observe", {"video": 2, "start": 0, "end": 30})
BAD_CALL = call("observe", {"video": 7, "start": 0, "end": 5})


@pytest.mark.parametrize(
    ("outputs", "correct", "bonus"),
    [
        ([LOOK, call("answer", {"answer": "B"})], 1.0, 0.1),  # looked, answered right, all valid
        ([LOOK, call("answer", {"answer": "A"})], 0.0, 0.1),  # wrong answer still earns the format bonus
        ([call("answer", {"answer": "B"})], 1.0, 0.0),  # no tool call: no bonus (the published code paid it)
        ([LOOK, BAD_CALL, call("answer", {"answer": "B"})], 1.0, 0.0),  # an invalid call, recovered
        ([LOOK, '<tool_call>{"name": "observe", "arguments": {"video": 1,', call("answer", {"answer": "B"})], 1.0, 0.0),
        ([LOOK, LOOK, LOOK, LOOK], 0.0, 0.0),  # never answered (no answer at the turn limit)
        ([LOOK, call("answer", {"answer": " b. "})], 1.0, 0.1),  # strict scoring normalizes the letter
    ],
)
def test_correctness_and_format(pet_script, outputs, correct, bonus):
    result, episode = play(pet_script, outputs)
    logged = {}
    assert Correctness()([[]], trace=[result], episode=[episode], log_metric=logged.__setitem__) == [correct]
    assert FormatBonus(0.1)([[]], trace=[result], episode=[episode]) == [bonus]
    assert logged["episode/tool_calls"] == result.tool_calls
    assert logged["episode/tool_errors"] == result.tool_errors == 0


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
    result, episode = play(fsa_script(), [call("answer", {"answer": answer})])
    assert Correctness(dense=dense)([[]], trace=[result], episode=[episode]) == [pytest.approx(expected)]


DOG, CAT = "a brown dog runs in a park", "the cat drinks milk"


@pytest.mark.parametrize(
    ("outputs", "share"),
    [
        ([LOOK, call("answer", {"answer": "B"})], 0.5),  # video 2 holds the dog, not the cat
        ([LOOK, call("observe", {"video": 1, "start": 18, "end": 28}), call("answer", {"answer": "A"})], 1.0),
        ([call("answer", {"answer": "B"})], 0.0),  # answered blind: nothing observed
        ([call("observe", {"video": 1, "start": 0, "end": 10}), call("answer", {"answer": "B"})], 0.0),  # wrong place
    ],
)
def test_evidence_reward_is_the_share_of_facts_observed(pet_script, outputs, share):
    result, episode = play(pet_script, outputs)
    reward = EvidenceReward({episode.id: [DOG, CAT]})
    assert reward([[]], trace=[result], episode=[episode]) == [share]  # paid whatever the answer's correctness
    assert EvidenceReward({})([[]], trace=[result], episode=[episode]) == [0.0]  # unknown episode: no evidence known


@pytest.mark.parametrize(
    ("outputs", "cost"),
    [
        ([call("answer", {"answer": "B"})], 0.0),  # answered in the first turn: nothing to pay
        ([LOOK, call("answer", {"answer": "B"})], -0.1),  # one look, then the answer
        ([LOOK, LOOK, call("answer", {"answer": "B"})], -0.2),  # looked again: a second turn paid, right or not
        ([LOOK, LOOK, LOOK, LOOK], -0.3),  # never answered: every turn after the first
    ],
)
def test_turn_cost_charges_every_turn_after_the_first(pet_script, outputs, cost):
    result, episode = play(pet_script, outputs)
    assert TurnCost(0.1)([[]], trace=[result], episode=[episode]) == [pytest.approx(cost)]
    assert TurnCost()([[]], trace=[result], episode=[episode]) == [0.0]  # the default only logs


def test_each_reward_function_reaches_the_trainer_beside_its_own_weight(warm_start, tmp_path):
    from tests.train.conftest import Jitter, trainer_over
    from train.config import TrainConfig
    from train.grpo import weighted_rewards
    from train.methods.jigsaw import JigsawReward

    cfg = TrainConfig.model_validate({"reward": {"evidence": 0.3, "turn_cost": 0.1}})
    rewards = weighted_rewards(cfg, {}, [Jitter()])
    assert [(type(func).__name__, weight) for func, weight in rewards] == [
        ("Correctness", 1.0),
        ("FormatBonus", 1.0),
        ("EvidenceReward", 0.3),  # the only one weighed by its setting: the others carry their size inside
        ("TurnCost", 1.0),
        ("Jitter", 1.0),
    ]
    jigsaw = TrainConfig.model_validate({"methods": {"jigsaw": {"enabled": True}}})
    assert isinstance(weighted_rewards(jigsaw, {})[0][0], JigsawReward)  # Eq. 6 in correctness's place

    trainer, *_ = trainer_over(warm_start, tmp_path, extra_rewards=[Jitter()])
    names = [type(func).__name__ for func in trainer.reward_funcs]
    assert names == ["Correctness", "FormatBonus", "EvidenceReward", "TurnCost", "Jitter"]
    assert trainer.reward_weights.tolist() == [1.0, 1.0, 0.0, 1.0, 1.0]  # reward.evidence's default, 0
