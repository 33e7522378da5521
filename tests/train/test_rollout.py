"""One GRPO rollout batch through the agent, checked per episode, for both protocols:
- `completion_ids` hold exactly the tokens the policy sampled, in order (no decode/re-encode),
- the conversation only grows by appending (every generation's input is a prefix of the final token stream),
- `env_mask` is 1 on exactly the sampled tokens and 0 on every tool-output and template token,
- the decoded rollout equals what the inference loop renders for the same actions and observations.
And: a trained checkpoint's tool schemas are the ones the agent sends to an OpenAI-compatible server.
"""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

import train.rollout
from agentcvr.agent import Agent
from agentcvr.policies.hf_policy import TOOLS_FILE, HFPolicy
from agentcvr.policies.openai_policy import OpenAIPolicy
from agentcvr.policies.scripted import ScriptedPolicy
from simulator.script_sim import ScriptSimulator
from tests.train.conftest import trainer_over
from train.rollout import PrefixCacheSampler, sample_batch, sampling_kwargs
from train.tokenizer import load_tokenizer


class GenerateRecorder:
    """Wraps the rollouts' `generate_batch` (the real model's decoding) to keep, per row of every batch, its input and
    its sampled tokens."""

    def __init__(self, monkeypatch):
        self.original, self.rows, self.batches = train.rollout.generate_batch, [], []
        monkeypatch.setattr(train.rollout, "generate_batch", self)

    def __call__(self, model, tokenizer, rows, *args, **kwargs):
        decoded = self.original(model, tokenizer, rows, *args, **kwargs)
        self.rows.extend((row, d.tokens) for row, d in zip(rows, decoded, strict=True))
        self.batches.append(len(rows))
        return decoded


def runs(mask: list[int]) -> list[tuple[int, int]]:
    """The (start, end) of each run of 1s."""
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


@pytest.mark.parametrize("protocol", ["tools", "json"])
def test_rollout_batch_is_token_exact_and_matches_the_inference_loop(request, tmp_path, protocol, monkeypatch):
    # the policy warm-started in this protocol, as train-sim's warm start is
    warm = request.getfixturevalue("warm_start" if protocol == "tools" else "json_warm_start")
    folder, scripts, limits = warm
    simulator = ScriptSimulator({s.id: s for s in scripts})
    agent = {"protocol": protocol, "max_turn_tokens": 48}
    grpo = {"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 512, "temperature": 0.7}
    trainer, rows, tokenizer, cfg = trainer_over(warm, tmp_path, agent=agent, grpo=grpo, perception=simulator)
    inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
    trainer.batch_rows = inputs
    recorder = GenerateRecorder(monkeypatch)
    torch.manual_seed(1)
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)

    eos = tokenizer.eos_token_id
    assert max(recorder.batches) == len(inputs)  # the first turns of all episodes were sampled as one batch
    tool_turns, used = 0, 0
    for i, result in enumerate(out["trace"]):
        prompt, completion, mask = out["prompt_ids"][i], out["completion_ids"][i], out["env_mask"][i]
        assert len(completion) == len(mask) == len(out["logprobs"][i])
        stream, texts = prompt + completion, []
        for start, end in runs(mask):
            given, new = stream[: len(prompt) + start], completion[start:end]
            # the model was fed exactly this prefix of the final stream (append-only) and sampled exactly these tokens
            assert any(g == given and s[: len(new)] == new for g, s in recorder.rows)
            texts.append(tokenizer.decode(new[:-1] if new[-1:] == [eos] else new, skip_special_tokens=False))
        used += len(texts)
        assert out["sampled_text"][i] == "\n".join(texts)  # the policy's own turns, no tool output (jigsaw's R_rep)
        assert len(texts) == result.turns - (result.failure == "policy_error")  # one sampled run per policy turn
        assert 0 in mask  # tool output and template turns are in the completion, masked
        assert all(lp == 0.0 for lp, m in zip(out["logprobs"][i], mask, strict=True) if m == 0)

        # The inference loop, given the same outputs, renders the same conversation.
        replay = ScriptedPolicy(texts, protocol=protocol)
        episode = out["episode"][i]
        again, messages = Agent(replay, simulator, limits).converse(episode, messages=inputs[i]["prompt"])
        assert [s.observation for s in again.steps] == [s.observation for s in result.steps]
        tools = trainer.rollout_func.tools if protocol == "tools" else None
        ends_open = messages[-1]["role"] != "assistant"
        rendered = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=ends_open, tokenize=False)
        decoded = tokenizer.decode(stream, skip_special_tokens=False)
        assert rendered in (decoded, decoded + "\n")
        tool_turns += sum(step.kind == "tool" for step in result.steps)
        if any(step.kind == "tool" for step in result.steps):
            hidden = tokenizer.decode([t for t, m in zip(completion, mask, strict=True) if m == 0])
            assert result.steps[0].observation[:20] in hidden  # the observation is in the masked part
    assert used == len(recorder.rows)  # every sampled row is one policy turn of one episode
    assert tool_turns > 0  # the memorized policy made tool calls, so tool output was appended and masked


def test_the_prefix_cache_samples_what_the_batch_samples_and_runs_a_shared_prefix_once(json_warm_start):
    folder, _, _ = json_warm_start
    tokenizer = load_tokenizer(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    greedy = sampling_kwargs(0.0)
    prompt = [{"role": "user", "content": "Which video shows the dog?"}]
    text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    first = tokenizer(text, add_special_tokens=False)["input_ids"]
    cached = PrefixCacheSampler(model, tokenizer, greedy)
    ((new, _),) = cached([first], 12)
    tail = tokenizer("\n<|im_start|>user\nvideo 2 at 10 s: a dog runs", add_special_tokens=False)["input_ids"]
    later = first + new + tail  # the next turn of the same rollout: its past, a tool result
    rows = [later, first]  # and another rollout of the same prompt

    before = dict(cached.tokens)
    samples = cached(rows, 12)
    for (ids, logprobs), (expected_ids, expected) in zip(
        samples, sample_batch(model, tokenizer, rows, 12, greedy), strict=True
    ):
        assert ids == expected_ids and logprobs == pytest.approx(expected, abs=1e-4)
    lengths = [len(ids) for ids, _ in samples]
    assert cached.tokens["sampled"] - before["sampled"] == sum(lengths)
    assert cached.tokens["decoded"] - before["decoded"] == sum(lengths)  # each row left the batch as it stopped
    # the later turn ran past what the first turn's cache holds (all but its last sampled token), the copy one token
    assert cached.tokens["context"] == len(first) + len(later) + len(first)
    assert cached.tokens["run"] == len(first) + (len(later) - (len(first) + len(new) - 1)) + 1
    assert len(cached.runs) == 2  # the first turn's cache went when the later turn extended it

    fresh = PrefixCacheSampler(model, tokenizer, greedy)  # a group's first turn: copies of one prompt in one batch
    ((expected_ids, expected),) = sample_batch(model, tokenizer, [first], 12, greedy)
    for ids, logprobs in fresh([first, first], 12):
        assert ids == expected_ids and logprobs == pytest.approx(expected, abs=1e-4)
    assert fresh.tokens["run"] == len(first) + 1  # the second copy ran its last token alone


def test_rollouts_with_the_prefix_cache_are_the_batched_rollouts(json_warm_start, tmp_path):
    agent = {"protocol": "json", "max_turn_tokens": 48}
    grpo = {"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 512, "temperature": 0.7}
    trainer, rows, _, cfg = trainer_over(json_warm_start, tmp_path, agent=agent, grpo=grpo)
    inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
    trainer.batch_rows, trainer.args.temperature = inputs, 0.0  # greedy: the same rollouts both ways
    rollouts = trainer.rollout_func
    batched = rollouts([row["prompt"] for row in inputs], trainer)
    before = dict(rollouts.tokens)
    rollouts.prefix_cache = True
    cached = rollouts([row["prompt"] for row in inputs], trainer)
    tokens = {key: rollouts.tokens[key] - before[key] for key in before}

    assert cached["completion_ids"] == batched["completion_ids"] and cached["env_mask"] == batched["env_mask"]
    for logprobs, expected in zip(cached["logprobs"], batched["logprobs"], strict=True):
        assert logprobs == pytest.approx(expected, abs=1e-4)
    assert tokens["sampled"] == before["sampled"] and tokens["decoded"] >= tokens["sampled"]
    assert tokens["context"] == before["context"]  # the same turns asked for the same context ...
    assert before["run"] >= before["context"] and tokens["run"] < before["context"] / 2  # ... run once, not each turn


def test_checkpoint_tool_schemas_are_the_agents(warm_start):
    """What a trained checkpoint saves (`tools.json`, read by HFPolicy) is what OpenAIPolicy sends to a server."""
    folder, scripts, _ = warm_start
    saved = json.loads((folder / TOOLS_FILE).read_text())
    sent = OpenAIPolicy(model="m", client=object()).request([], scripts[0].episode)["tools"]
    assert saved == sent
    assert HFPolicy(folder).tools == sent
