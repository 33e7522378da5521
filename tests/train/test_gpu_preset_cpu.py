"""A GPU preset on the CPU, on real weights and a real chat template (issue 20, item 5).

`agentcvr train-sim --preset gpu-qwen3-4b` with only what a CPU cannot run changed: Qwen2.5-Coder-0.5B-Instruct from
the registry GGUF (dequantized, float32; its own tokenizer and Qwen tool-call template) in place of Qwen3-4B, the
rule simulator in place of an LLM at a URL, and no vLLM, DeepSpeed, bf16 or flash attention; sizes are cut to two
GRPO steps. The rest is the preset's: no warm start, the KL reference model, gradient checkpointing, two optimizer
steps per generation batch, its sampling, rewards and nine task kinds. So the preset path meets a real tokenizer's
tool-call template here before it meets a GPU.

Marked slow and heavy (`make test-heavy`; `make test` leaves it out), not gguf: it reads the 0.5B GGUF that
`agentcvr models` fetches (skipped without it) through torch, and the gguf lane is llama.cpp's own process
(Makefile). ~14 min and 15 GB of RAM on one thread; ~12 GB written to its temporary folder (the dequantized base,
the trainer's checkpoint with optimizer, the final policy).
"""

from __future__ import annotations

import json
import math

import pytest
import yaml
from typer.testing import CliRunner

from agentcvr.actions import tool_schemas
from agentcvr.agent import Agent
from agentcvr.cli import app
from agentcvr.interfaces import Limits
from agentcvr.models import SMALL_LLM, get_spec, models_dir
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.trajectories import prompt_messages

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # ~14 min, 15 GB: `make test-heavy`

WEIGHTS = get_spec(SMALL_LLM).path(models_dir())
# What the CPU cannot run, replaced (README, Training options, gives the same command).
ON_CPU = [
    f"model.name_or_path=gguf:{SMALL_LLM}",
    "model.dtype=float32",
    "model.attn_implementation=null",
    "simulator.kind=rule",
    "grpo.use_cpu=true",
    "grpo.use_vllm=false",
    "grpo.bf16=false",
    "grpo.deepspeed=null",
    "eval.enabled=false",
]
# Small enough for minutes on one thread: one script per task kind, one prompt x 2 rollouts per step, a look and an
# answer per episode. steps_per_generation stays the preset's 2: both steps train on one generation batch.
SMALL = [
    "data.grpo_per_task=1",
    "data.heldout_per_task=0",
    "agent.max_turns=2",
    "agent.max_turn_tokens=48",
    "agent.max_observation_chars=300",
    "grpo.num_generations=2",
    "grpo.prompts_per_step=1",
    "grpo.max_steps=2",
    "grpo.max_completion_length=256",  # holds the expert's episodes here (train/budget.py)
]
# The instructions the Qwen2.5 template writes around the tool schemas.
QWEN_TOOL_INSTRUCTIONS = (
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
    'XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not WEIGHTS.is_file():
        pytest.skip(f"embedded model weights not fetched ({WEIGHTS}); run `agentcvr models`")
    out = tmp_path_factory.mktemp("gpu-preset") / "run"
    args = ["train-sim", "--preset", "gpu-qwen3-4b", "--out", str(out)]
    result = CliRunner().invoke(app, args + [f"-o{o}" for o in ON_CPU + SMALL], terminal_width=200)
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    return out


def test_the_run_kept_the_presets_training_settings(run):
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["name"] == "gpu-qwen3-4b" and cfg["sft"]["enabled"] is False  # RL straight from the instruct model
    assert len(cfg["data"]["tasks"]) == 9 and cfg["grpo"]["steps_per_generation"] == 2
    assert cfg["grpo"]["beta"] == 0.005 and cfg["grpo"]["gradient_checkpointing"] is True
    assert (cfg["grpo"]["temperature"], cfg["grpo"]["top_p"], cfg["grpo"]["top_k"]) == (0.8, 0.9, 50)
    assert not (run / "warmstart").exists()


def test_the_policy_speaks_the_gguf_qwen_tool_call_template(run):
    from gguf import GGUFReader

    from train.tokenizer import load_tokenizer

    field = GGUFReader(WEIGHTS).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode()
    tokenizer = load_tokenizer(str(run / "final"))
    assert tokenizer.chat_template == template  # the file's own template (byte for byte TRL's qwen2_5 copy), carried
    # to the trained checkpoint: what is new here against the tiny tokenizers is a real vocabulary and a real model
    assert tokenizer.eos_token == "<|im_end|>"  # the end of an assistant turn: where rollout turns stop
    assert len(tokenizer.encode("<tool_call>", add_special_tokens=False)) == 1
    script = generate_one("PI", 0, 0)  # a GRPO prompt of this run (data.train_per_task is 0)
    messages = prompt_messages(script.episode, Limits(max_turns=2, max_observation_chars=300))
    text = tokenizer.apply_chat_template(messages, tools=tool_schemas(), add_generation_prompt=True, tokenize=False)
    assert QWEN_TOOL_INSTRUCTIONS in text
    tools = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line)["function"]["name"] for line in tools] == [t["function"]["name"] for t in tool_schemas()]
    assert text.startswith("<|im_start|>system\n" + messages[0]["content"])  # our system prompt, then the tools
    assert text.endswith("<|im_start|>assistant\n")


def test_grpo_ran_two_steps_with_a_finite_loss(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "loss" in row]
    assert [row["step"] for row in steps] == [1, 2]  # two optimizer steps on one generation batch (the preset's)
    assert all(math.isfinite(row["loss"]) and math.isfinite(row["kl"]) for row in steps)  # KL: the reference model ran
    assert all(0 < row["entropy"] < 12 for row in steps)  # over the sampled tokens the mask kept (ln 151936 = 11.9)
    assert steps[0]["num_tokens"] > 0 and steps[0]["episode/turns"] >= 1  # the rollouts logged with the first step
    assert (run / "final" / "DONE").read_text() == "2"


def test_the_final_checkpoint_takes_a_turn_in_the_agent_loop(run):
    from agentcvr.policies.hf_policy import HFPolicy

    policy = HFPolicy(run / "final", max_new_tokens=48)
    script = generate_one("NC", 0, 0)
    limits = Limits(max_turns=2, max_recoveries=0, max_observation_chars=300)  # the first turn is not forced
    result = Agent(policy, ScriptSimulator({script.id: script}), limits).run(script.episode)
    first = result.steps[0]
    # The policy saw the episode's prompt as the real template renders it: the system prompt, Qwen's tools block
    # (737 tokens together) and the question.
    assert first.prompt_tokens == len(policy.prompt_ids(prompt_messages(script.episode, limits))) > 737
    # Greedy, it writes a <tool_call> block (special tokens kept by the decode) that the parser reads as an action.
    # (On a forced-answer turn this model writes a bare letter instead: a format error, so that turn is not used.)
    assert first.kind in ("tool", "answer"), first
