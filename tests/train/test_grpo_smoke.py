"""A few real GRPO steps of the tiny policy, its rollouts run by the LangGraph agent over the simulator (seconds): the
loss is finite, tool calls happen and reach the simulator, tool-result tokens are masked out of the loss, and the
parameters move.

Shrunk values, each commented; the real preset is train/presets/cpu-tiny.yaml.
"""

from __future__ import annotations

import math

import torch

from agentcvr.actions import tool_schemas
from agentcvr.components import make_training_perception
from simulator.script_sim import ScriptSimulator
from tests.train.conftest import Jitter
from train.config import TrainConfig
from train.tokenizer import boilerplate
from train.trajectories import episodes_by_id, prompt_rows


def test_grpo_steps_on_the_tiny_policy(warm_start, tmp_path):
    from datasets import Dataset

    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer

    folder, scripts, limits = warm_start
    cfg = TrainConfig.model_validate(
        {
            "agent": {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars},
            "grpo": {
                "num_generations": 4,  # G=4 instead of 8
                "prompts_per_step": 1,  # one episode per step
                "gradient_accumulation_steps": 2,  # its 4 rollouts generated together, learned from in two halves
                "max_steps": 2,  # two optimizer steps
                "max_completion_length": 256,  # short multi-turn completions
                "temperature": 0.7,  # close to the memorized behaviour, still sampling
                "learning_rate": 1e-3,
                "beta": 0.01,  # KL on, so the reference model path is exercised too
                "save_steps": 100,  # no checkpoint in this test
                "report_to": [],
            },
        }
    )
    tokenizer = load_tokenizer(str(folder))
    rows = prompt_rows(scripts, limits)
    table = {s.id: s for s in scripts}
    trainer = build_trainer(
        cfg,
        str(folder),
        tokenizer,
        Dataset.from_list(rows),
        episodes_by_id(table),
        make_training_perception(cfg, table),  # the simulator train-sim wires from the config
        tmp_path / "out",
        tmp_path / "tb",
        extra_rewards=[Jitter()],
        evidence={s.id: [item.fact for item in s.evidence] for s in scripts},
    )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()

    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 2 and all(math.isfinite(row["loss"]) for row in logs)
    assert sum(row["episode/tool_calls"] for row in logs) > 0  # the policy called tools and they reached the simulator
    assert all(row["episode/tool_errors"] == 0 for row in logs)  # rollout threads share the simulator unharmed
    assert all(0.0 <= row["rewards/evidence/mean"] <= 1.0 for row in logs)  # logged at weight 0 (reward.evidence)
    sampled = [row for row in logs if "reward" in row]
    assert sampled and all(row["groups/with_spread"] == 1.0 for row in sampled)  # the jitter reward parts every group
    # where the sampled batch's time went: the agent's rollouts, then TRL's log-prob passes and the rewards
    assert all(row["timing/rollout_seconds"] > 0 and row["timing/scoring_seconds"] > 0 for row in logs)

    batch = trainer.last_batch
    assert len(batch["completion_ids"]) == 4  # a step's rollouts come from one generation, micro-batches or not
    # TRL rendered the rollout prompt token for token as the warm start saw it (tool order, system block).
    prompt = batch["prompt_ids"][0][batch["prompt_mask"][0].bool()].tolist()
    expected = [
        tokenizer.apply_chat_template(r["prompt"], tools=tool_schemas(), add_generation_prompt=True, return_dict=True)
        for r in rows
    ]
    assert prompt in [e["input_ids"] for e in expected]
    assert tokenizer.decode(prompt[:1]) == boilerplate(tool_schemas())[0]  # the system block is one token
    tool_mask, completion_mask = batch["tool_mask"], batch["completion_mask"]
    masked = (tool_mask == 0) & (completion_mask == 1)
    assert masked.any()  # some completion tokens are tool output, excluded from the loss
    ids = batch["completion_ids"]
    hidden = [tokenizer.decode(ids[r][masked[r]].tolist()) for r in range(len(ids))]
    trained = [
        tokenizer.decode(ids[r][(tool_mask[r] == 1) & (completion_mask[r] == 1)].tolist()) for r in range(len(ids))
    ]
    # What the environment wrote (a tool result, or the rules' reply to a refused call: sampling decides which) was
    # appended and masked ...
    assert any("<tool_response>" in text or "<|im_start|>user" in text for text in hidden), hidden
    assert not any("<tool_response>" in text for text in trained)  # ... and never trained on
    assert any("<tool_call>" in text for text in trained)  # the calls themselves are trained

    changed = [name for name, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert changed  # the optimizer moved the policy


def test_groups_with_spread_ignores_float_noise_in_a_constant_group():
    from train.grpo import groups_with_spread

    same = (torch.full((8,), 0.1) + 0.5 * torch.ones(8)).tolist()  # eight rollouts that all earned 0.6 ...
    assert not math.isclose(torch.tensor(same).std().item(), 0.0, abs_tol=1e-8)  # ... whose float32 std is not 0
    parted = [0.1] * 7 + [0.6]
    assert groups_with_spread(same + parted, 8) == 0.5
    assert groups_with_spread(same, 8) == 0.0


def test_checkpoint_runs_as_a_policy_in_the_agent_loop(warm_start):
    """`agentcvr run --policy hf:PATH`: the saved policy drives the real loop; it memorized episode 0, so it calls a
    tool that the parser accepts and the simulator answers."""
    from agentcvr.agent import Agent
    from agentcvr.policies.hf_policy import HFPolicy

    folder, scripts, limits = warm_start
    table = {s.id: s for s in scripts}
    result = Agent(HFPolicy(folder, max_new_tokens=64), ScriptSimulator(table), limits).run(scripts[0].episode)
    assert result.tool_calls >= 1 and result.steps[0].kind == "tool"
    assert result.steps[0].observation


def one_step_at_beta_zero(warm_start, tmp_path):
    """One GRPO step of the tiny policy without a KL term, a group of 2 parted by a random reward: its last batch
    holds rows with an advantage."""
    from tests.train.conftest import trainer_over

    grpo = {"num_generations": 2, "prompts_per_step": 1, "gradient_accumulation_steps": 1, "max_steps": 1}
    grpo |= {"max_completion_length": 256, "temperature": 0.7, "beta": 0.0, "save_steps": 100}
    trainer, *_ = trainer_over(warm_start, tmp_path, grpo=grpo, extra_rewards=[Jitter()])
    trainer.train()
    return trainer


def test_rows_without_advantage_skip_the_passes_and_give_the_same_zero_gradient(warm_start, tmp_path):
    """With beta 0 a micro-batch whose advantages are all zero is skipped (no forward pass), and its gradient is the
    zero that TRL's own loss gives it: nothing changes but the time."""
    from trl import GRPOTrainer

    trainer = one_step_at_beta_zero(warm_start, tmp_path)
    batch, model = trainer.last_batch, trainer.model
    assert batch["advantages"].any()  # the jitter parted the group
    forwards = []
    hook = model.base_model.register_forward_hook(lambda *_: forwards.append(1))  # TRL's passes and ours run it
    trainable = [p for p in model.parameters() if p.requires_grad]

    def gradients(loss) -> list[torch.Tensor]:
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in trainable]

    still = dict(batch, advantages=torch.zeros_like(batch["advantages"]))
    skipped = trainer._compute_loss(model, still)
    assert not forwards and skipped.item() == 0.0
    assert all(not g.any() for g in gradients(skipped))  # zeros, not None: the optimizer steps as it would have
    full = GRPOTrainer._compute_loss(trainer, model, still)  # TRL's loss on the same rows: the passes, the same zeros
    assert forwards and full.item() == 0.0 and all(not g.any() for g in gradients(full))
    forwards.clear()
    # rows with an advantage are learned from (the loss's value is the centred advantages' sum, zero up to rounding
    # at the first iteration: the gradient is what says so)
    learned = gradients(trainer._compute_loss(model, batch))
    assert forwards and any(g.any() for g in learned)
    hook.remove()


def test_the_passes_skip_the_columns_no_row_of_the_micro_batch_uses(warm_start, tmp_path):
    """Cut to the columns its rows use, each row of a padded batch (more pads added on both sides, as a row beside a
    longer prompt and a longer completion gets) gives TRL's own loss and gradient, over fewer columns."""
    from trl import GRPOTrainer

    from train.grpo import without_padding

    trainer = one_step_at_beta_zero(warm_start, tmp_path)
    batch, model = trainer.last_batch, trainer.model
    widths = []
    hook = model.base_model.register_forward_hook(  # the backbone: TRL's passes and ours run it
        lambda _m, args, kwargs, _o: widths.append(kwargs["input_ids"].size(1)), with_kwargs=True
    )
    trainable = [p for p in model.parameters() if p.requires_grad]

    def loss_and_gradients(loss) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad()
        loss.backward()
        return loss.item(), [p.grad.clone() for p in trainable]

    def padded(row: int, left: int, right: int) -> dict:
        one = {k: v[row : row + 1] if isinstance(v, torch.Tensor) and v.dim() >= 1 else v for k, v in batch.items()}
        pad = torch.zeros(1, left, dtype=one["prompt_ids"].dtype)
        one["prompt_ids"] = torch.cat([pad, one["prompt_ids"]], dim=1)
        one["prompt_mask"] = torch.cat([torch.zeros_like(pad), one["prompt_mask"]], dim=1)
        for key in ("completion_ids", "completion_mask", "tool_mask", "old_per_token_logps"):
            if key in one:
                one[key] = torch.cat([one[key], torch.zeros(1, right, dtype=one[key].dtype)], dim=1)
        return one

    model.eval()  # no dropout: the two passes must see the same function
    for row in range(batch["advantages"].numel()):
        one = padded(row, left=5, right=7)
        used = int(one["prompt_mask"].sum()) + int(one["completion_mask"][0].nonzero()[-1]) + 1
        cut, share = without_padding(one)
        assert cut["prompt_ids"].size(1) + cut["completion_ids"].size(1) == used
        assert math.isclose(share, 1 - used / (one["prompt_ids"].size(1) + one["completion_ids"].size(1))) and share > 0
        full_loss, full_grads = loss_and_gradients(GRPOTrainer._compute_loss(trainer, model, one))
        cut_loss, cut_grads = loss_and_gradients(trainer._compute_loss(model, one))
        assert widths[-2:] == [one["prompt_ids"].size(1) + one["completion_ids"].size(1), used]
        assert math.isclose(full_loss, cut_loss, rel_tol=1e-4, abs_tol=1e-6)
        assert all(torch.allclose(f, c, rtol=1e-3, atol=1e-6) for f, c in zip(full_grads, cut_grads, strict=True))
        assert any(g.any() for g in cut_grads)  # a real gradient, not two zeros
    hook.remove()


def test_the_loss_projects_only_the_positions_it_reads(warm_start, tmp_path):
    """While the loss runs, the output layer scores only the sampled tokens (tool output is most of a rollout):
    TRL's loss and gradient on every row, over fewer positions, and the same log-probabilities and entropies there."""
    from trl import GRPOTrainer

    from train.grpo import loss_positions, scored_logps

    trainer = one_step_at_beta_zero(warm_start, tmp_path)
    batch, model = trainer.last_batch, trainer.model
    projected = []
    hook = model.get_output_embeddings().register_forward_hook(
        lambda _m, args, _o: projected.append(args[0].shape[:-1].numel())
    )
    trainable = [p for p in model.parameters() if p.requires_grad]

    def loss_and_gradients(loss) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad()
        loss.backward()
        return loss.item(), [p.grad.clone() for p in trainable]

    model.eval()  # no dropout: the two passes must see the same function
    for row in range(batch["advantages"].numel()):
        one = {k: v[row : row + 1] if isinstance(v, torch.Tensor) and v.dim() >= 1 else v for k, v in batch.items()}
        read, projected[:] = int(loss_positions(one).sum()), []
        assert 0 < read < int(one["completion_mask"].sum())  # tool output is sampled-over but never read
        full_loss, full_grads = loss_and_gradients(GRPOTrainer._compute_loss(trainer, model, one))
        scored_loss, scored_grads = loss_and_gradients(trainer._compute_loss(model, one))
        assert projected == [read]  # TRL's head reads the weight itself, over every position (no call here)
        assert math.isclose(full_loss, scored_loss, rel_tol=1e-4, abs_tol=1e-6)
        assert all(torch.allclose(f, c, rtol=1e-3, atol=1e-6) for f, c in zip(full_grads, scored_grads, strict=True))
        assert any(g.any() for g in scored_grads)  # a real gradient, not two zeros

        ids = torch.cat([one["prompt_ids"], one["completion_ids"]], dim=1)
        mask = torch.cat([one["prompt_mask"], one["completion_mask"]], dim=1)
        width, scored = one["completion_ids"].size(1), loss_positions(one)
        with torch.no_grad():
            fused = model(input_ids=ids, attention_mask=mask, labels=ids, fused_lm_head=True)
            logps, entropies = scored_logps(model, ids, mask, scored, trainer.temperature)
        assert torch.allclose(logps[scored], fused.log_probs[:, -width:][scored], atol=1e-5)
        # float32 sums over the vocabulary: two threads round differently (1.07e-5 apart seen), so relative too
        assert torch.allclose(entropies[scored], fused.entropy[:, -width:][scored], rtol=1e-4, atol=1e-5)
        assert not logps[~scored].any() and not entropies[~scored].any()
    hook.remove()
