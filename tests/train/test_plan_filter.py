"""GRPO prompts where the plan matters (`data.grpo_prompts=plans_differ`): the shipped reader answers after the scan and
after the search teacher's turn over the real simulator; only scripts whose reward differs are kept."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentcvr.agent import Agent
from agentcvr.components import make_policy, make_training_perception
from agentcvr.interfaces import Limits
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.config import TrainConfig
from train.pipeline import Run
from train.plan_filter import per_kind, plans_differ
from train.rewards import score

LIMITS = Limits(max_turns=4, max_observation_chars=2000)  # the gpu-looker preset's


def test_only_scripts_whose_reward_changes_with_the_search_are_kept():
    scripts = [generate_one("MSR", i, 5) for i in range(6)] + [generate_one("BU", i, 5) for i in range(2)]
    simulator = ScriptSimulator({s.id: s for s in scripts}, sampling="frames")
    kept = plans_differ(scripts, simulator, LIMITS, "scan-v2", 128, dense=True)

    assert [s.id for s in kept] == ["MSR-000002", "MSR-000003"]  # of these eight, where the search's look pays
    assert per_kind(kept) == "MSR 2"
    for script in kept:
        rewards = {}
        for looks in ("scan", "search"):
            policy = make_policy("random", reader="scan-v2", reader_looks=looks, scan_frames=128)
            result = Agent(policy, simulator, LIMITS).run(script.episode)
            rewards[looks] = score(result, script.episode, dense=True)
        assert rewards["search"] > rewards["scan"]  # BU: no search turn, the same looks either way, never kept


def test_a_run_that_keeps_no_prompt_says_why(tmp_path):
    cfg = TrainConfig.model_validate(
        {"data": {"tasks": ["BU"], "grpo_prompts": "plans_differ"}, "agent": {"reader": "scan-v2"}}
    )
    run = Run(cfg, tmp_path)
    run.grpo_scripts = [generate_one("BU", i, 5) for i in range(2)]
    with pytest.raises(ValueError, match="kept no GRPO script"):
        run.prompt_scripts(make_training_perception(cfg, {s.id: s for s in run.grpo_scripts}))
    assert "0 of 2" in (tmp_path / "train.log").read_text()


def test_plans_differ_needs_a_reader():
    with pytest.raises(ValidationError, match="needs agent.reader"):
        TrainConfig.model_validate({"data": {"grpo_prompts": "plans_differ"}})
