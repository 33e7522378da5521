"""Training in the published JSON protocol: a checkpoint warm-started on the teacher's JSON turns records its action
format, runs in the agent loop as trained (no tool schemas in its prompt), and takes real GRPO steps whose tool output
("Result of ..." user turns) is masked out of the loss."""

from __future__ import annotations

import json
import math

import pytest

from agentcvr.agent import Agent
from agentcvr.policies.hf_policy import POLICY_FILE, TOOLS_FILE, HFPolicy, checkpoint_protocol
from simulator.script_sim import ScriptSimulator
from tests.train.conftest import trainer_over


def test_a_json_checkpoint_records_its_format_and_runs_in_the_loop(json_warm_start):
    folder, scripts, limits = json_warm_start
    assert json.loads((folder / POLICY_FILE).read_text()) == {"protocol": "json"}
    assert not (folder / TOOLS_FILE).exists()
    policy = HFPolicy(folder, max_new_tokens=96)
    assert (policy.protocol, policy.tools) == ("json", None)
    table = {s.id: s for s in scripts}
    result = Agent(policy, ScriptSimulator(table), limits).run(scripts[0].episode)
    assert result.steps[0].kind == "tool" and result.steps[0].observation  # a memorized JSON call, answered
    with pytest.raises(ValueError, match="takes no tool schemas"):
        HFPolicy(folder, tools=[])


def test_a_checkpoint_without_a_manifest_writes_tool_calls_and_a_bad_one_is_named(tmp_path):
    assert checkpoint_protocol(tmp_path) == "tools"
    (tmp_path / POLICY_FILE).write_text('{"protocol": "xml"}')
    with pytest.raises(ValueError, match="protocol must be 'tools' or 'json', got 'xml'"):
        checkpoint_protocol(tmp_path)


def test_grpo_steps_on_the_json_policy(json_warm_start, tmp_path):
    grpo = {"num_generations": 4, "prompts_per_step": 1, "max_steps": 1, "max_completion_length": 384}
    grpo |= {"temperature": 0.1, "learning_rate": 1e-3, "save_steps": 100}  # near greedy: the memorized calls
    trainer, _, tokenizer, _ = trainer_over(json_warm_start, tmp_path, agent={"protocol": "json"}, grpo=grpo)
    trainer.train()

    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 1 and math.isfinite(logs[0]["loss"]) and logs[0]["episode/tool_calls"] > 0
    batch = trainer.last_batch
    ids, tool_mask, completion_mask = batch["completion_ids"], batch["tool_mask"], batch["completion_mask"]
    hidden = [
        tokenizer.decode(ids[r][(tool_mask[r] == 0) & (completion_mask[r] == 1)].tolist()) for r in range(len(ids))
    ]
    trained = [
        tokenizer.decode(ids[r][(tool_mask[r] == 1) & (completion_mask[r] == 1)].tolist()) for r in range(len(ids))
    ]
    assert any("Result of observe" in text for text in hidden)  # observations came back as user turns, masked
    assert not any("Result of" in text for text in trained)  # ... and were never trained on
    assert any('"action": "observe"' in text for text in trained)  # the policy's own JSON calls are trained
