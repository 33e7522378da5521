"""Agent rollouts sampled through TRL's vLLM generation (`grpo.use_vllm`), up to the vLLM boundary.

vLLM needs a GPU, so `VLLMGeneration` is replaced by a stand-in with its interface (`generate(prompts, images,
num_generations) -> (prompt_ids, completion_ids, logprobs, logprob_token_ids)`, `max_completion_length`,
`generation_kwargs`, `mode`) that samples with the real tiny model. What is checked is ours: one request per turn
batch with the turn's budget and the end-of-turn stop, TRL's settings restored afterwards, vLLM's log-prob layout
read, the episodes' token streams built from vLLM's tokens, and the setups that cannot work refused by name.
"""

from __future__ import annotations

import copy

import pytest
import torch

from tests.train.conftest import trainer_over
from train.rollout import sample_batch, sampling_kwargs, vllm_sampler


class VLLMGenerationStandIn:
    """TRL's `VLLMGeneration` as the rollout sees it; generation by the real model, requests recorded."""

    def __init__(self, model, tokenizer, mode: str = "colocate", tensor_parallel_size: int = 1):
        self.model, self.tokenizer, self.mode, self.tensor_parallel_size = model, tokenizer, mode, tensor_parallel_size
        self.max_completion_length = 768  # TRL's whole-completion budget
        self.generation_kwargs: dict = {"seed": 3}
        self.requests: list[dict] = []

    def generate(self, prompts, images, num_generations, profiler=None):
        self.requests.append(
            {
                "rows": len(prompts),
                "max_tokens": self.max_completion_length,
                "kwargs": dict(self.generation_kwargs),
                "n": num_generations,
                "images": images,
            }
        )
        samples = sample_batch(
            self.model, self.tokenizer, prompts, self.max_completion_length, sampling_kwargs(0.0)
        )  # greedy: the memorized calls
        # vLLM's layout: per token a list of log-probs, the sampled token's first when logprobs=0
        logprobs = [[[lp] for lp in lps] for _, lps in samples]
        return prompts, [ids for ids, _ in samples], logprobs, None


def test_agent_rollouts_sample_each_turn_batch_through_vllm(warm_start, tmp_path):
    grpo = {"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 512}
    trainer, rows, tokenizer, cfg = trainer_over(warm_start, tmp_path, agent={"max_turn_tokens": 48}, grpo=grpo)
    model = trainer.accelerator.unwrap_model(trainer.model)
    generation = VLLMGenerationStandIn(copy.deepcopy(model), tokenizer)  # vLLM holds its own copy of the weights
    trainer.use_vllm, trainer.vllm_generation = True, generation
    model.generate = None  # the trainer's model must not sample: vLLM does
    inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
    trainer.batch_rows = inputs
    torch.manual_seed(1)
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)

    assert generation.requests[0]["rows"] == len(inputs)  # the first turns of all episodes in one request
    assert all(r["max_tokens"] == 48 and r["n"] == 1 and r["images"] is None for r in generation.requests)
    assert all(r["kwargs"] == {"seed": 3, "stop_token_ids": [tokenizer.eos_token_id]} for r in generation.requests)
    assert (generation.max_completion_length, generation.generation_kwargs) == (768, {"seed": 3})  # TRL's, restored
    turns = sum(result.turns for result in out["trace"])
    assert sum(r["rows"] for r in generation.requests) == turns  # every sampled turn came from vLLM
    assert any(step.kind == "tool" for result in out["trace"] for step in result.steps)
    for completion, mask, logprobs in zip(out["completion_ids"], out["env_mask"], out["logprobs"], strict=True):
        assert len(completion) == len(mask) == len(logprobs) and 0 in mask
        sampled = [lp for lp, m in zip(logprobs, mask, strict=True) if m == 1]
        assert all(lp <= 0 for lp in sampled) and any(lp < 0 for lp in sampled)  # vLLM's log-probs, read
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 0)


def test_setups_that_cannot_sample_turn_by_turn_are_refused(warm_start):
    with pytest.raises(ValueError, match="vllm_mode=server run on one process"):
        vllm_sampler(VLLMGenerationStandIn(None, None, mode="server"), stop_id=2, processes=2)
    with pytest.raises(ValueError, match="vllm_tensor_parallel_size=1"):
        vllm_sampler(VLLMGenerationStandIn(None, None, tensor_parallel_size=2), stop_id=2)

    class NoLogprobs(VLLMGenerationStandIn):
        def generate(self, prompts, images, num_generations, profiler=None):
            return prompts, [[5, 2]], None, None

    with pytest.raises(ValueError, match="no log-probs"):
        vllm_sampler(NoLogprobs(None, None), stop_id=2)([[1, 2, 3]], 8)
