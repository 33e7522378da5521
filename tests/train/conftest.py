"""Shared training fixtures: a tiny warm-started policy (seconds to build), reused by the GRPO and rollout tests."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from agentcvr.actions import tool_schemas
from agentcvr.interfaces import Limits
from agentcvr.masters import ADAPTER_FOLDER
from agentcvr.policies.expert import ExpertPolicy
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator
from train.config import TrainConfig
from train.pipeline import save_policy
from train.sft import _collate, assistant_loss, encode
from train.tiny_model import build_tiny_model, load_policy_model, with_lora
from train.tokenizer import boilerplate, render_with_template, train_tokenizer
from train.trajectories import teacher_conversations


class Jitter:
    """A seeded random reward: every group gets a non-zero advantage, so the update can never be a no-op."""

    __name__ = "jitter"

    def __init__(self):
        self.rng = random.Random(0)

    def __call__(self, completions, **kwargs):
        return [self.rng.random() for _ in completions]


def memorized_policy(folder, protocol: str = "tools"):
    """A 2-layer, 32-wide policy that has memorized expert trajectories of two PI episodes in `protocol` (a few
    seconds), saved as a checkpoint in `folder`."""
    torch.manual_seed(0)
    limits = Limits(max_turns=4, max_observation_chars=200)  # short episodes: 4 turns, 200-character tool output
    scripts = generate("PI", 2, seed=0)  # two episodes: GRPO replays what SFT memorized, so tool calls come out
    table = {s.id: s for s in scripts}
    teacher = ExpertPolicy(table, protocol=protocol)
    conversations, _ = teacher_conversations(scripts, teacher, ScriptSimulator(table), limits)
    tools = tool_schemas() if protocol == "tools" else None
    texts = render_with_template(conversations, tools)
    tokenizer = train_tokenizer(
        texts * 4, vocab_size=1024, fixed=boilerplate(tools, protocol)
    )  # a small vocabulary is enough for two episodes
    cfg = TrainConfig().model.model_copy(
        update={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "max_position_embeddings": 1024}
    )
    model = build_tiny_model(cfg, tokenizer)
    batch = _collate([encode(tokenizer, t) for t in texts], tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(60):  # 60 full-batch steps memorize the two trajectories
        loss, _ = assistant_loss(model, *batch)  # ids, attention, labels, weights
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    save_policy(model, tokenizer, folder, protocol=protocol)
    return folder, scripts, limits


ONE_GRPO_STEP = {  # one sampled group of 4 and one update, large enough to visibly move a rank-4 adapter
    "num_generations": 4,
    "prompts_per_step": 1,
    "max_steps": 1,
    "max_completion_length": 256,
    "learning_rate": 1e-2,
}


def lora_config(warm, grpo: dict) -> TrainConfig:
    """A rank-4 LoRA on the top layer of the memorized policy `warm`, used as the pretrained base (as `train-sim -o
    model.lora_rank=R` makes it), under its limits, one GRPO step (`ONE_GRPO_STEP`) and these GRPO settings over it
    (TRL's reporting off)."""
    base, _, limits = warm
    return TrainConfig.model_validate(
        {
            "model": {"kind": "pretrained", "name_or_path": str(base), "lora_rank": 4, "lora_top_layers": 1},
            "agent": {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars},
            "grpo": {"report_to": [], **ONE_GRPO_STEP, **grpo},
        }
    )


def lora_warm_start(cfg: TrainConfig, folder: Path) -> Path:
    """`folder` made a LoRA warm start of `cfg`'s base: the base's files (its tokenizer) and a fresh adapter over it."""
    base = cfg.model.name_or_path
    shutil.copytree(base, folder)
    with_lora(load_policy_model(cfg.model, base), cfg.model).save_pretrained(folder / ADAPTER_FOLDER)
    return folder


@pytest.fixture(scope="session")
def warm_start(tmp_path_factory):
    """The memorized policy, writing tool calls."""
    return memorized_policy(tmp_path_factory.mktemp("warm"))


@pytest.fixture(scope="session")
def json_warm_start(tmp_path_factory):
    """The memorized policy, writing the published JSON protocol."""
    return memorized_policy(tmp_path_factory.mktemp("warm_json"), "json")


def trainer_over(
    warm, tmp_path, agent: dict | None = None, grpo: dict | None = None, sft: dict | None = None, **options
):
    """The real GRPO trainer (`train.grpo.build_trainer`) over a memorized policy `warm` = (folder, scripts, limits),
    with these config sections (`sft`: only what the GRPO settings are checked against) on top of the policy's
    limits (TRL's reporting off); `options` go to build_trainer."""
    from datasets import Dataset

    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    folder, scripts, limits = warm
    agent = {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars, **(agent or {})}
    cfg = TrainConfig.model_validate({"agent": agent, "grpo": {"report_to": [], **(grpo or {})}, "sft": sft or {}})
    table = {s.id: s for s in scripts}
    rows = prompt_rows(scripts, limits, cfg.agent.protocol)
    perception = options.pop("perception", None) or ScriptSimulator(table)
    tokenizer = load_tokenizer(str(folder))
    dataset = Dataset.from_list(rows)
    trainer = build_trainer(
        cfg, str(folder), tokenizer, dataset, episodes_by_id(table), perception, tmp_path, tmp_path, **options
    )
    return trainer, rows, tokenizer, cfg


@pytest.fixture(scope="session")
def tiny_llama():
    """A randomly initialised two-layer Llama (64-token vocabulary): decoding and caches, in milliseconds."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        attn_implementation="sdpa",
    )
    return LlamaForCausalLM(config).eval()
