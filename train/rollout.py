"""GRPO rollouts through the deployed agent: `GRPOTrainer(rollout_func=RolloutFunc(...))`.

Each rollout is one `agentcvr.agent.Agent` episode (the same compiled LangGraph, the same `EpisodeRules` as
inference) with the simulator as perception and a `TokenPolicy` as policy. The policy works token-in/token-out with
the trainer's current weights: the conversation is a fixed prefix (the chat-template rendering of the episode's first
messages) that only grows by appending: each sampled turn as sampled (env_mask 1, with its log-probs), then whatever
the loop appended since (tool results, recovery or forced-answer prompts, the template's turn markers) rendered by the
chat template against a dummy turn and appended with env_mask 0. Sampled tokens are never decoded and re-encoded.

Turns are sampled on the trainer's model (`generate_batch`), or, with `grpo.use_vllm`, by TRL's own vLLM generation
(`vllm_sampler`: TRL syncs the weights into vLLM before each rollout), one turn per request, stopping at the end of the
assistant turn. With `grpo.prefix_cache` each row first runs alone only what the longest prefix kept from an earlier
turn of the batch does not hold, and the rows then sample together over their merged caches (`PrefixCacheSampler`), so
a context token is run about once instead of once a turn and once a rollout. Decoding writes into a growing cache
(`train.kv_cache.growing_cache`: spare positions written in place) instead of HF's `DynamicCache`, whose every token
copies the whole cache, and lets each row go as it stops (`train.decode.decode_rows`), where `generate` decodes
padding for it until the batch's longest turn ends.

TRL 1.16 contract (experimental): `rollout_func(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs",
**extra}`; `env_mask` becomes the trainer's `tool_mask`; the other extras (`trace`, `episode`, `sampled_text`: the
policy's own turns without tool output) reach the reward functions as keyword lists. The episodes of a generation
batch run together, one thread each: `agentcvr.batching.TurnBatcher` holds each episode's next turn until every live
episode has asked for one, then samples them as one left-padded batch, its rows in episode order (so a seeded run
samples the same rollouts again, whichever thread asks first).

With `grpo.forced_search_share`, a share of each episode's rollouts in the batch start their turn after the scan with
the search's first tokens (`train/forced_plan.py`): written into the stream as sampled (env_mask 1, log-prob 0, the
probability they were drawn with), so the loss trains them with the rollout's advantage; `forced` reaches the rewards.
With `grpo.trained_tokens=plan` the loss mask keeps only the plan token (the last of the forced tokens, or the token a
free rollout wrote in its place), so the outcome trains the choice and not how the chosen plan is carried out; the
completion handed to TRL is cut after that token, so the update's passes skip the rest of the episode. That token
is the same in every turn's context (`{"action": "` then look or answer), so raising it after the scan raised it
after the search too and the master never answered (docs/gpu_grpo.md, session 34); `decisions` trains that token in
every turn, each with its rollout's advantage, so a rollout that looks again instead of answering pays for it there.

With a trained reader (`agent.reader`), the choice tasks' answers are the reader's (`ReaderAnswers`): the reward then
scores the policy's looks by what the reader makes of them, which is how GRPO trains looking apart from reading.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from transformers import DynamicCache

from agentcvr.agent import Agent
from agentcvr.batching import TurnBatcher
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, PolicyOutput
from agentcvr.policies.read_answers import Answerer, ReaderAnswers
from agentcvr.session import EpisodeRules
from train.decode import Decoded, decode_rows, row_states
from train.kv_cache import cache_over, growing_cache


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
        sampler: Callable[[list[int], int], Sample] | None = None,
        forced: Start | None = None,
        plan: Start | None = None,
    ):
        self.model, self.tokenizer, self.protocol = model, tokenizer, protocol
        self.forced = forced  # (turn, ids): that assistant turn starts with these tokens (train/forced_plan.py)
        self.was_forced = False
        self.plan = plan or forced  # where the plans part: its last token is the plan token
        self.plan_index: int | None = None  # the plan token's place in completion_ids, once the rollout wrote it
        self.decisions: list[int] = []  # the same place in every turn: each turn's choice to look or to answer
        self.sampler = sampler  # None: sample this episode alone
        self.tools = tools if protocol == "tools" else None  # the JSON protocol describes its actions in the prompt
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.max_new_tokens, self.max_completion_length = max_new_tokens, max_completion_length
        self.stop_id = tokenizer.eos_token_id
        self.prompt_ids: list[int] | None = None
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        self.logprobs: list[float] = []
        self.sampled_texts: list[str] = []  # each turn's sampled text, as the parser read it
        self.sampled_turns = 0
        self._seen = 0  # messages of the conversation already in the token stream
        self._dummy: tuple[list[dict], list[int]] | None = None  # the dummy turn and its rendering, made once

    def render(self, messages: list[dict], generation_prompt: bool) -> list[int]:
        rendered = self.tokenizer.apply_chat_template(
            messages, tools=self.tools, add_generation_prompt=generation_prompt, tokenize=True, return_dict=True
        )
        return list(rendered["input_ids"])

    def appended_ids(self, messages: list[dict]) -> list[int]:
        """The template's tokens for `messages` following an assistant turn, up to the next assistant header."""
        if self._dummy is None:
            dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
            prefix = self.render(dummy, generation_prompt=False)
            self._dummy = dummy, prefix[: len(prefix) - prefix[::-1].index(self.stop_id)]  # up to its end of turn
        dummy, prefix = self._dummy
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
        budget = min(self.max_new_tokens, room)
        forced = self.forced[1] if self.forced and self.forced[0] == self.sampled_turns else []
        if len(forced) >= budget:
            forced = []  # no room to write the rest of the forced turn: sample it as it comes
        new, logprobs = self._sample(self.prompt_ids + self.completion_ids + forced, budget - len(forced))
        if forced:  # kept in the loss as the policy's own tokens; sampled with probability 1
            new, logprobs = forced + new, [0.0] * len(forced) + logprobs
            self.was_forced = True
        stopped = bool(new) and new[-1] == self.stop_id
        if self.plan and len(new) >= len(self.plan[1]) and new[: len(self.plan[1]) - 1] == self.plan[1][:-1]:
            self.decisions.append(len(self.completion_ids) + len(self.plan[1]) - 1)  # the turn's action, as taught
            if self.plan[0] == self.sampled_turns:  # the turn after the scan: the plan token
                self.plan_index = self.decisions[-1]
        self._append(new, sampled=True, logprobs=logprobs)
        if not stopped:  # cut off mid-turn: the template's end-of-turn closes it (not trained on)
            self._append([self.stop_id], sampled=False)
        self.sampled_turns += 1
        text = self.tokenizer.decode(new[:-1] if stopped else new, skip_special_tokens=False)
        self.sampled_texts.append(text)
        return PolicyOutput(content=text, prompt_tokens=len(self.prompt_ids), completion_tokens=len(new))

    def _sample(self, ids: list[int], max_new_tokens: int) -> Sample:
        if self.sampler is not None:
            return self.sampler(ids, max_new_tokens)
        sampling = sampling_kwargs(self.temperature, self.top_p, self.top_k)
        return sample_batch(self.model, self.tokenizer, [ids], max_new_tokens, sampling)[0]

    def choice_row(self, tokens: str) -> tuple[list[int], list[int], list[float]]:
        """The completion as the loss needs it when only choices are trained (`tokens`: "plan", the plan token;
        "decisions", every turn's action token): cut after the last of them (the loss at a token reads only what
        precedes it, so the update's passes skip the rest), then closed by the stop token (not trained), with a mask
        that keeps those tokens alone; where none was written, the stop token alone, untrained."""
        if tokens == "decisions":
            kept = self.decisions
        else:
            kept = [] if self.plan_index is None else [self.plan_index]
        end = max(kept, default=-1) + 1
        mask = [0] * (end + 1)
        for i in kept:
            mask[i] = 1
        return self.completion_ids[:end] + [self.stop_id], mask, self.logprobs[:end] + [0.0]

    def _append(self, ids: list[int], sampled: bool, logprobs: list[float] | None = None) -> None:
        self.completion_ids += ids
        self.env_mask += [int(sampled)] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)


Sample = tuple[list[int], list[float]]  # the sampled ids (up to and with the stop token) and their log-probs
Start = tuple[int, list[int]]  # an assistant turn (from 0) and the tokens forced at its start
Turn = tuple[list[int], int]  # one episode's token row and its turn's token budget


DECODINGS = ("generate", "growing", "rows")  # HF generate over its DynamicCache, over a growing cache; `decode_rows`


def sample_batch(
    model, tokenizer, rows: list[list[int]], max_new_tokens: int, sampling: dict[str, Any], decoding: str = "rows"
) -> list[Sample]:
    """One turn for each token row, sampled as one left-padded batch; each row cut after its first stop token."""
    return as_samples(generate_batch(model, tokenizer, rows, max_new_tokens, sampling, decoding))


def as_samples(decoded: list[Decoded]) -> list[Sample]:
    return [(d.tokens, d.logprobs) for d in decoded]


def generate_batch(
    model,
    tokenizer,
    rows: list[list[int]],
    max_new_tokens: int,
    sampling: dict[str, Any],
    decoding: str = "rows",
    cache=None,
    keep_states: bool = False,
) -> list[Decoded]:
    """`sample_batch`, with each row's cache over its row and turn but the last token when `keep_states`; `cache`
    (left-padded, every row's tokens but its last) spares the pass over what it holds. `decoding` (`DECODINGS`):
    `rows` lets each row go as it stops (`train.decode.decode_rows`) over a `growing_cache`; `growing` and
    `generate` (for comparison) decode with HF `generate`, which runs every row to the longest turn's end, over a
    growing cache or over HF's default one, which copies the whole cache every step."""
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {DECODINGS}, not {decoding!r}")
    width, pad, stop = max(len(r) for r in rows), tokenizer.pad_token_id, tokenizer.eos_token_id
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=model.device)
    attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=model.device)
    if cache is None:
        cache = DynamicCache() if decoding == "generate" else growing_cache(spare=min(max_new_tokens, 512))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if decoding == "rows":
                return decode_rows(model, ids, attention, cache, max_new_tokens, stop, sampling, keep_states)
            out = model.generate(
                input_ids=ids,
                attention_mask=attention,
                max_new_tokens=max_new_tokens,
                eos_token_id=stop,
                pad_token_id=pad,
                output_scores=True,
                return_dict_in_generate=True,
                cache=cache,
                **sampling,
            )
    finally:
        model.train(was_training)
    decoded = []
    for b, (row, new) in enumerate(zip(rows, out.sequences[:, width:].tolist(), strict=True)):
        end = new.index(stop) + 1 if stop in new else len(new)
        logprobs = [torch.log_softmax(out.scores[t][b].float(), dim=-1)[new[t]].item() for t in range(end)]
        states = None
        if keep_states:  # out of the batch's padding and what the batch sampled after this row had stopped
            start, stop_at = width - len(row), width + end - 1
            states = row_states(out.cache, b, start, stop_at)
        decoded.append(Decoded(new[:end], logprobs, len(new), states))  # every row ran to the longest turn's end
    return decoded


def count_decoding(tokens: dict[str, int], decoded: list[Decoded]) -> None:
    """Add a batch's sampled tokens and the decoding steps its rows ran: HF `generate` runs every row until the
    longest turn ends (a row that stopped decodes padding); `decode_rows` lets stopped rows go."""
    tokens["sampled"] += sum(len(d.tokens) for d in decoded)
    tokens["decoded"] += sum(d.steps for d in decoded)


class BatchSampler:
    """`sample(rows, max_new_tokens)` as one left-padded batch (`sample_batch`), counting the context tokens asked for
    and those the model ran (every row padded to the longest), and the tokens sampled and decoded (`count_decoding`)."""

    def __init__(self, model, tokenizer, sampling: dict[str, Any], decoding: str = "rows"):
        self.model, self.tokenizer, self.sampling, self.decoding = model, tokenizer, sampling, decoding
        self.tokens = {"context": 0, "run": 0, "sampled": 0, "decoded": 0}

    def __call__(self, rows: list[list[int]], max_new_tokens: int) -> list[Sample]:
        self.tokens["context"] += sum(len(row) for row in rows)
        self.tokens["run"] += max(len(row) for row in rows) * len(rows)
        decoded = generate_batch(self.model, self.tokenizer, rows, max_new_tokens, self.sampling, self.decoding)
        count_decoding(self.tokens, decoded)
        return as_samples(decoded)


class PrefixCacheSampler:
    """`sample(rows, max_new_tokens)` as one left-padded batch whose pass over each row's context starts past the
    longest prefix a row run before holds (kept for this sampler's life: one generation batch, one set of weights).

    A left-padded batch runs every row's whole context again each turn. Here a group's rollouts share their prompt and
    mostly the scan's turn,
    and a rollout's next turn starts with its last: each row runs alone only what no kept cache holds, then the rows'
    caches, left-padded into one, sample together (`generate_batch`: the same sampling, the same log-probs)."""

    def __init__(self, model, tokenizer, sampling: dict[str, Any], decoding: str = "rows"):
        self.model, self.tokenizer, self.sampling, self.decoding = model, tokenizer, sampling, decoding
        self.runs: list[tuple[list[int], DynamicCache]] = []  # (tokens, their cache), none a prefix of another
        # context tokens asked for and those the model ran; tokens sampled and the rows' decoding steps
        self.tokens = {"context": 0, "run": 0, "sampled": 0, "decoded": 0}

    def __call__(self, rows: list[list[int]], max_new_tokens: int) -> list[Sample]:
        if min(len(row) for row in rows) < 2:
            raise ValueError("a turn's context must hold at least two tokens (a prompt)")
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                caches = [self._prefilled(row) for row in rows]
        finally:
            self.model.train(was_training)
        width = max(len(row) for row in rows)
        states = (  # one layer at a time: the batch's cache is the only whole copy of the rows' caches
            tuple(
                torch.cat([left_padded(getattr(c.layers[i], part), width - 1) for c in caches])
                for part in ("keys", "values")
            )
            for i in range(len(caches[0].layers))
        )
        if self.decoding == "generate":
            merged = cache_over(states)
        else:
            merged = growing_cache(states, spare=min(max_new_tokens, 512))
        del caches
        decoded = generate_batch(
            self.model, self.tokenizer, rows, max_new_tokens, self.sampling, self.decoding, merged, keep_states=True
        )
        count_decoding(self.tokens, decoded)
        for row, d in zip(rows, decoded, strict=True):
            self._keep(row + d.tokens[: len(d.tokens) - 1], cache_over(d.states))
        return as_samples(decoded)

    def _prefilled(self, row: list[int]) -> DynamicCache:
        """A cache of every token of `row` but its last (the batch's pass runs that one), from the longest prefix a
        kept cache holds."""
        known, cache = self._longest_prefix(row)
        if known < len(row) - 1:
            ids = torch.tensor([row[known:-1]], device=self.model.device)
            cache = self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).cache
            self._keep(row[:-1], cache)  # the batch's other copies of this row run their last token alone
        self.tokens["context"] += len(row)
        self.tokens["run"] += len(row) - known
        return cache

    def _longest_prefix(self, row: list[int]) -> tuple[int, DynamicCache | None]:
        """How many of `row`'s first tokens a kept cache holds (all but the last at most), and that cache cut there;
        (0, None) when none shares a token.

        The cut is a view, not a copy: a `DynamicLayer` never writes into its tensors (`update` concatenates into new
        ones, `crop` takes a view), so a row run on from it leaves the kept cache as it was. With copies here, 16 rows
        of two NC prompts rose 14.5 GB while sampling, 9.6 GB without (`benchmarks/rollout_prefix_cache.py`)."""
        best, source = 0, None
        for tokens, cache in self.runs:
            shared = common_prefix(tokens, row)
            if shared > best:
                best, source = shared, cache
        best = min(best, len(row) - 1)
        if best <= 0:
            return 0, None
        return best, cache_over((layer.keys[..., :best, :], layer.values[..., :best, :]) for layer in source.layers)

    def _keep(self, tokens: list[int], cache: DynamicCache) -> None:
        self.runs = [(kept, c) for kept, c in self.runs if tokens[: len(kept)] != kept]  # those it extends go
        self.runs.append((tokens, cache))


def left_padded(states: torch.Tensor, width: int) -> torch.Tensor:
    """A (1, heads, length, dim) key or value tensor with zeros before it up to `width` positions (masked)."""
    pad = width - states.shape[-2]
    return torch.nn.functional.pad(states, (0, 0, pad, 0)) if pad else states


def common_prefix(a: list[int], b: list[int]) -> int:
    """The number of leading tokens `a` and `b` share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def sampling_kwargs(temperature: float, top_p: float = 1.0, top_k: int = 0) -> dict[str, Any]:
    if temperature <= 0:
        return {"do_sample": False}
    return {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k or None}


def vllm_sampler(generation, stop_id: int, processes: int = 1) -> Callable[[list[list[int]], int], list[Sample]]:
    """Sample turns through TRL's `VLLMGeneration` (server or colocate mode), which TRL keeps in sync with the
    trainer's weights. It serves whole completions, so each call sets its token budget to one turn's and adds the
    end-of-turn stop; vLLM returns the sampled tokens (the stop token included) and their log-probs.

    Server mode gathers every process's prompts in one collective call per batch, and processes would reach
    different numbers of turns: it runs on one process only. So does tensor-parallel colocate mode."""
    if generation.mode == "server" and processes > 1:
        raise ValueError("agent rollouts with vllm_mode=server run on one process; use vllm_mode=colocate")
    if generation.mode == "colocate" and getattr(generation, "tensor_parallel_size", 1) > 1:
        raise ValueError("agent rollouts need vllm_tensor_parallel_size=1: TP groups gather prompts turn by turn")

    def sample(rows: list[list[int]], max_new_tokens: int) -> list[Sample]:
        budget, kwargs = generation.max_completion_length, generation.generation_kwargs
        stops = sorted({*kwargs.get("stop_token_ids", []), stop_id})
        generation.max_completion_length = max_new_tokens
        generation.generation_kwargs = {**kwargs, "stop_token_ids": stops}
        try:
            _, completions, logprobs, _ = generation.generate(rows, None, 1)
        finally:
            generation.max_completion_length, generation.generation_kwargs = budget, kwargs
        if logprobs is None:
            raise ValueError("vLLM returned no log-probs: GRPO needs the sampled tokens' (generation logprobs=0)")
        return [(list(ids), [lp[0] for lp in lps]) for ids, lps in zip(completions, logprobs, strict=True)]

    return sample


def turn_sampler(sample: Callable[[list[list[int]], int], list[Sample]]) -> Callable[[list[Turn]], list[Sample]]:
    """`sample(rows, max_new)` over a batch of turns (`TurnBatcher`'s run): one call with the largest budget, each
    row then keeping its own first `max_new` tokens."""

    def run(turns: list[Turn]) -> list[Sample]:
        samples = sample([ids for ids, _ in turns], max(n for _, n in turns))
        return [(new[:n], logprobs[:n]) for (_, n), (new, logprobs) in zip(turns, samples, strict=True)]

    return run


def forced_rows(episode_ids: list[str], starts: Mapping[str, Start], share: float) -> list[Start | None]:
    """Each row's forced start: the first `round(share * copies)` of each episode's copies in the batch get its
    start (a group of 8 at share 0.5: four forced, four free), episodes without one none. Counted in the rows one
    process samples: on several processes each forces that share of the copies it holds."""
    copies, seen, forced = Counter(episode_ids), Counter(), []
    for episode_id in episode_ids:
        take = episode_id in starts and seen[episode_id] < round(share * copies[episode_id])
        forced.append(starts[episode_id] if take else None)
        seen[episode_id] += 1
    return forced


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
        reader: Answerer | None = None,
        starts: Mapping[str, Start] | None = None,
        forced_share: float = 0.0,
        trained_tokens: str = "all",
        prefix_cache: bool = False,
    ):
        self.episodes, self.perception, self.limits, self.reader = episodes, perception, limits, reader
        self.prefix_cache = prefix_cache
        self.decoding = "rows"  # how a turn's batch decodes (`DECODINGS`; the others for a benchmark's comparison)
        # context tokens the turns asked for and those the model ran; tokens sampled and rows' decoding steps run
        self.tokens = {"context": 0, "run": 0, "sampled": 0, "decoded": 0}
        self.starts, self.forced_share = starts or {}, forced_share
        if trained_tokens not in ("all", "plan", "decisions"):
            raise ValueError(f"trained_tokens must be 'all', 'plan' or 'decisions', not {trained_tokens!r}")
        self.trained_tokens = trained_tokens
        self.protocol, self.tools, self.max_new_tokens = protocol, tools, max_new_tokens
        self.seconds = {"simulator": 0.0, "total": 0.0}
        self.batch_sizes: list[int] = []  # turns sampled together, per batch, in the last call
        self.episodes_run = self.turns_run = 0

    def __call__(self, prompts: list, trainer) -> dict[str, list]:
        rows = trainer.batch_rows
        if len(rows) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(rows)} rows: batch_rows is stale")
        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer, args = trainer.processing_class, trainer.args
        counted: BatchSampler | PrefixCacheSampler | None = None  # the samplers that count their tokens
        if getattr(trainer, "use_vllm", False):
            sample = vllm_sampler(trainer.vllm_generation, tokenizer.eos_token_id, trainer.accelerator.num_processes)
        else:
            sampling = sampling_kwargs(args.temperature, args.top_p, args.top_k or 0)
            kind = PrefixCacheSampler if self.prefix_cache else BatchSampler
            sample = counted = kind(model, tokenizer, sampling, self.decoding)
        batcher: TurnBatcher[Turn, Sample] = TurnBatcher(turn_sampler(sample), episodes=len(rows))
        episodes, policies = [], []
        forced = forced_rows([row["episode_id"] for row in rows], self.starts, self.forced_share)
        for prompt, row, start in zip(prompts, rows, forced, strict=True):
            episode = self.episodes[row["episode_id"]]
            expected = EpisodeRules(episode, self.perception, self.limits, self.protocol).initial_messages()
            if prompt[:1] != expected[:1]:  # the user message may carry a hint (train/methods/hints.py)
                raise ValueError(f"the dataset prompt of {episode.id} is not for this agent ({self.protocol} protocol)")
            episodes.append(episode)
            policies.append(
                TokenPolicy(
                    model,
                    tokenizer,
                    protocol=self.protocol,
                    tools=self.tools,
                    max_new_tokens=self.max_new_tokens,
                    max_completion_length=args.max_completion_length,
                    sampler=lambda ids, n: batcher((ids, n)),
                    forced=start,
                    plan=self.starts.get(row["episode_id"]),
                )
            )

        def one(i: int):
            batcher.bind(i)
            try:
                return self.run(policies[i], episodes[i], prompts[i])
            finally:
                batcher.finished()

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(rows), thread_name_prefix="rollout") as pool:
            results = list(pool.map(one, range(len(rows))))
        self.seconds["total"] += time.perf_counter() - started
        self.batch_sizes = batcher.batches
        if counted is not None:
            for key, count in counted.tokens.items():
                self.tokens[key] += count
        choices = self.trained_tokens != "all"
        trained = [
            p.choice_row(self.trained_tokens) if choices else (p.completion_ids, p.env_mask, p.logprobs)
            for p in policies
        ]
        return {
            "prompt_ids": [p.prompt_ids for p in policies],
            "completion_ids": [ids for ids, _, _ in trained],
            "logprobs": [logprobs for _, _, logprobs in trained],
            "env_mask": [mask for _, mask, _ in trained],
            "trace": results,
            "episode": episodes,
            "sampled_text": ["\n".join(p.sampled_texts) for p in policies],
            "forced": [p.was_forced for p in policies],
            "planned": [p.plan_index is not None for p in policies],
        }

    def run(self, policy: TokenPolicy, episode: Episode, prompt: list[dict]):
        """One episode through the agent; the simulator's time is read from the trace."""
        acting = policy if self.reader is None else ReaderAnswers(policy, self.reader)
        result, _ = Agent(acting, self.perception, self.limits).converse(episode, messages=prompt)
        self.seconds["simulator"] += sum(step.tool_seconds for step in result.steps)
        self.episodes_run += 1
        self.turns_run += result.turns
        return result
