"""The random policy: valid calls, reproducible traces, and chance-level scores (the lower bound)."""

from __future__ import annotations

from statistics import mean

import pytest

from agentcvr.agent import Agent
from agentcvr.policies.random_policy import RandomPolicy
from agentcvr.tasks import TASK_ORDER
from scripts_gen.checks import answerable, random_chance
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator


def test_calls_are_valid_and_the_answer_is_well_formed():
    scripts = generate("all", 5, seed=41)
    agent = Agent(RandomPolicy(seed=3, max_calls=3), ScriptSimulator({s.id: s for s in scripts}))
    for script in scripts:
        result = agent.run(script.episode)
        assert result.format_errors == 0 and result.failure is None and result.answer
        assert 1 <= result.tool_calls <= 3 and result.steps[-1].kind == "answer"
        assert {s.tool for s in result.steps[:-1]} <= {"observe", "listen"}


def test_same_seed_same_trace_other_seed_other_trace():
    scripts = generate("all", 2, seed=42)
    simulator = ScriptSimulator({s.id: s for s in scripts})

    def traces(seed: int) -> list[list[tuple]]:
        agent = Agent(RandomPolicy(seed), simulator)
        return [[(s.tool, tuple(s.arguments.items())) for s in agent.run(x.episode).steps] for x in scripts]

    assert traces(0) == traces(0)
    assert traces(0) != traces(1)


@pytest.mark.slow  # hundreds of episodes, ~13 s
def test_random_scores_near_chance():
    # 60 episodes per task, 600 in all: the pooled mean has a standard error of about 0.01.
    scripts = [s for task in TASK_ORDER for s in generate(task, 60, seed=43)]
    report = answerable(scripts, policy=RandomPolicy(seed=0))
    chance = {s.id: random_chance(s, draws=40) for s in scripts}
    assert abs(report.mean - mean(chance.values())) < 0.04
    for task in TASK_ORDER:
        ids = [s.id for s in scripts if s.task == task]
        got, expected = mean(report.scores[i] for i in ids), mean(chance[i] for i in ids)
        assert abs(got - expected) < 0.15, f"{task}: random policy {got:.3f} vs chance {expected:.3f}"
    assert mean(report.scores[s.id] for s in scripts if s.task == "CCQA") == 0.0
