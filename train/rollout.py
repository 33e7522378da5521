"""GRPO rollouts through the deployed agent: `GRPOTrainer(rollout_func=RolloutFunc(...))`.

Each rollout is one `agentcvr.agent.Agent` episode (the same compiled LangGraph, the same `EpisodeRules` as
inference) with the simulator as perception and a `TokenPolicy` as policy. The policy works token-in/token-out with
the trainer's current weights: the conversation is a fixed prefix (the chat-template rendering of the episode's first
messages) that only grows by appending: each sampled turn as sampled (env_mask 1, with its log-probs), then whatever
the loop appended since (tool results, recovery or forced-answer prompts, the template's turn markers) rendered by the
chat template against a dummy turn and appended with env_mask 0. Sampled tokens are never decoded and re-encoded.

TRL 1.16 contract (experimental): `rollout_func(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs",
**extra}`; `env_mask` becomes the trainer's `tool_mask`; the other extras (`trace`, `episode`) reach the reward
functions as keyword lists. Episodes run one by one (turns are not batched across the episodes of a generation
batch yet).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import torch

from agentcvr.agent import Agent
from agentcvr.episode import Episode
from agentcvr.protocols import Limits, Perception, PolicyOutput
from agentcvr.session import EpisodeRules


class CompletionBudgetSpent(RuntimeError):
    """The episode's completion reached `max_completion_length` tokens: it ends as a recorded policy failure."""


class TokenPolicy:
    """A `Policy` that samples from a causal LM and records the token stream of its episode."""

    def __init__(
        self,
        model,
        tokenizer,
        protocol: str = "tools",
        tools: list[dict] | None = None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        max_new_tokens: int = 128,
        max_completion_length: int = 768,
    ):
        self.model, self.tokenizer, self.protocol = model, tokenizer, protocol
        self.tools = tools if protocol == "tools" else None  # the JSON protocol describes its actions in the prompt
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.max_new_tokens, self.max_completion_length = max_new_tokens, max_completion_length
        self.stop_id = tokenizer.eos_token_id
        self.prompt_ids: list[int] | None = None
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        self.logprobs: list[float] = []
        self.sampled_turns = 0
        self._seen = 0  # messages of the conversation already in the token stream

    def render(self, messages: list[dict], generation_prompt: bool) -> list[int]:
        rendered = self.tokenizer.apply_chat_template(
            messages, tools=self.tools, add_generation_prompt=generation_prompt, tokenize=True, return_dict=True
        )
        return list(rendered["input_ids"])

    def appended_ids(self, messages: list[dict]) -> list[int]:
        """The template's tokens for `messages` following an assistant turn, up to the next assistant header."""
        dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        prefix = self.render(dummy, generation_prompt=False)
        prefix = prefix[: len(prefix) - prefix[::-1].index(self.stop_id)]  # up to the turn's end-of-turn token
        full = self.render(dummy + messages, generation_prompt=True)
        if full[: len(prefix)] != prefix:
            raise ValueError("the chat template does not render a conversation as a prefix of its continuation")
        return full[len(prefix) :]

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        if self.prompt_ids is None:
            self.prompt_ids = self.render(messages, generation_prompt=True)
        else:
            if messages[self._seen].get("role") != "assistant":
                raise ValueError("the loop must append the policy's own turn first")
            self._append(self.appended_ids(messages[self._seen + 1 :]), sampled=False)
        self._seen = len(messages)
        room = self.max_completion_length - len(self.completion_ids)
        if room <= 0:
            raise CompletionBudgetSpent(f"the completion reached {self.max_completion_length} tokens")
        new, logprobs = self._sample(min(self.max_new_tokens, room))
        stopped = bool(new) and new[-1] == self.stop_id
        self._append(new, sampled=True, logprobs=logprobs)
        if not stopped:  # cut off mid-turn: the template's end-of-turn closes it (not trained on)
            self._append([self.stop_id], sampled=False)
        self.sampled_turns += 1
        text = self.tokenizer.decode(new[:-1] if stopped else new, skip_special_tokens=False)
        return PolicyOutput(content=text, prompt_tokens=len(self.prompt_ids), completion_tokens=len(new))

    def _append(self, ids: list[int], sampled: bool, logprobs: list[float] | None = None) -> None:
        self.completion_ids += ids
        self.env_mask += [int(sampled)] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)

    def _sample(self, max_new_tokens: int) -> tuple[list[int], list[float]]:
        assert self.prompt_ids is not None
        ids = torch.tensor([self.prompt_ids + self.completion_ids], device=self.model.device)
        sampling: dict[str, Any] = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p}
            sampling["top_k"] = self.top_k or None
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    eos_token_id=self.stop_id,
                    pad_token_id=self.tokenizer.pad_token_id,
                    output_scores=True,
                    return_dict_in_generate=True,
                    **sampling,
                )
        finally:
            self.model.train(was_training)
        new = out.sequences[0, ids.shape[1] :].tolist()
        logprobs = [
            torch.log_softmax(scores[0].float(), dim=-1)[token].item()
            for scores, token in zip(out.scores, new, strict=True)
        ]
        return new, logprobs


class RolloutFunc:
    """`rollout_func` for GRPOTrainer: one agent episode per prompt row, the rows read from `trainer.batch_rows`
    (set by `train.grpo.CVRGRPOTrainer`, since TRL passes only the prompts)."""

    def __init__(
        self,
        episodes: Mapping[str, Episode],
        perception: Perception,
        limits: Limits,
        protocol: str = "tools",
        tools: list[dict] | None = None,
        max_new_tokens: int = 128,
    ):
        self.episodes, self.perception, self.limits = episodes, perception, limits
        self.protocol, self.tools, self.max_new_tokens = protocol, tools, max_new_tokens
        self.seconds = {"policy": 0.0, "simulator": 0.0, "total": 0.0}
        self.episodes_run = self.turns_run = 0

    def __call__(self, prompts: list, trainer) -> dict[str, list]:
        rows = trainer.batch_rows
        if len(rows) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(rows)} rows: batch_rows is stale")
        model = trainer.accelerator.unwrap_model(trainer.model)
        args = trainer.args
        out: dict[str, list] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask")}
        out.update(trace=[], episode=[])
        for prompt, row in zip(prompts, rows, strict=True):
            episode = self.episodes[row["episode_id"]]
            expected = EpisodeRules(episode, self.perception, self.limits, self.protocol).initial_messages()
            if prompt[:1] != expected[:1]:  # the user message may carry a hint (train/methods/hints.py)
                raise ValueError(f"the dataset prompt of {episode.id} is not for this agent ({self.protocol} protocol)")
            policy = TokenPolicy(
                model,
                trainer.processing_class,
                protocol=self.protocol,
                tools=self.tools,
                temperature=args.temperature,
                top_p=args.top_p,
                top_k=args.top_k or 0,
                max_new_tokens=self.max_new_tokens,
                max_completion_length=args.max_completion_length,
            )
            result = self.run(policy, episode, prompt)
            out["prompt_ids"].append(policy.prompt_ids)
            out["completion_ids"].append(policy.completion_ids)
            out["logprobs"].append(policy.logprobs)
            out["env_mask"].append(policy.env_mask)
            out["trace"].append(result)
            out["episode"].append(episode)
        return out

    def run(self, policy: TokenPolicy, episode: Episode, prompt: list[dict]):
        """One episode through the agent, with its time split into policy and simulator."""
        started = time.perf_counter()
        result, _ = Agent(policy, self.perception, self.limits).converse(episode, messages=prompt)
        self.seconds["total"] += time.perf_counter() - started
        self.seconds["simulator"] += sum(step.tool_seconds for step in result.steps)
        self.seconds["policy"] += sum(step.policy_seconds for step in result.steps)
        self.episodes_run += 1
        self.turns_run += result.turns
        return result
