"""The embedded default master: a GGUF model run in-process by llama.cpp (`xllamacpp`), on CPU, offline.

It speaks the published AgentCVR JSON protocol (one object per turn, `prompts.SYSTEM_JSON`), decoded under a grammar
built from `json_protocol.turn_schema(episode)`, so even a 0.5B model emits actions the parser accepts. With
`answer_orders > 1` a multiple-choice answer is asked again with the options in other orders and the majority taken
(`option_vote`); with `answer_scoring="cloze"|"verify"` the option whose text scores best replaces the letter written
(`option_scoring`). Measured, none beats the turn's own answer (`benchmarks/answer_scoring.py`), so all are off.

Speed on a 2-core machine comes from three things:
- the schema goes to llguidance directly with compact separators (`{"action": "observe", ...}` on one line) rather
  than through `response_format`: fewer output tokens than pretty-printed JSON, and text that re-tokenizes to the
  tokens that were sampled, so the server's prompt cache reuses the whole previous turn;
- one slot with `cache_prompt`: each turn only evaluates the new observation message;
- capped free text (`thought`, `focus_prompt`) and `max_tokens`.
Every completion is streamed, so a run told to stop (`agentcvr.cancel`: a server's timeout, a client gone, shutdown)
ends it between tokens, or between prompt batches of `prompt_batch` tokens while a long observation is read;
llama.cpp then drops the request and the slot is free for the next one. Nothing is kept per call or per episode beyond
a small LRU.
At the turn limit, when the loop asks for the final answer, the grammar holds only the answer shape (anything else
would be rejected by the loop anyway). The default context (8192 tokens, ~100 MB of KV cache for the 0.5B, ~230 MB
for the 1.5B) holds a 20-turn episode with multi-video observations; an overflow fails the turn with llama.cpp's
message.

    policy = GGUFPolicy()                       # fetches the default master (qwen2.5-coder-1.5b) on first use
    Agent(policy, ScriptSimulator(scripts)).run(episode)
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

from agentcvr import cancel
from agentcvr.actions import Answer
from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.models import DEFAULT_MASTER, SMALL_LLM, ensure_model
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.policies.json_protocol import LETTER_TASKS, Times, scan_turn, turn_schema
from agentcvr.policies.option_scoring import (
    CLOZE_PROMPT,
    YES_OR_NO,
    OptionScore,
    Scoring,
    choose,
    literal_grammar,
    verify_prompt,
)
from agentcvr.policies.option_vote import reask_message, vote
from agentcvr.session import forced_turn, is_recovery

# llguidance options: no free whitespace, one-line separators (see the module docstring).
COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
# What a long-lived process keeps: the timings of the latest calls, and the grammars and context-fitting state of
# the latest episodes (a server sees a new episode id per request; more than its concurrent runs is enough).
TIMINGS_KEPT = 256
EPISODES_KEPT = 64
# Prompt tokens llama.cpp reads per compute step. A stop request waits for the step in progress (xllamacpp cannot
# interrupt one), so this bounds how long a run takes to stop while the master reads an observation; smaller steps
# read a prompt more slowly. 32: for the 1.5B on one thread of the 2-core machine a 64-token step took 2.3-3.1 s (over
# the 2 s a stop may take), a 32-token one about half at ~97 % of the speed (0.92-1.08x of 64 by round), 16 tokens
# cost ~25 % of it (benchmarks/gguf_prompt_batch.py, docs/service.md).
PROMPT_BATCH = 32


def load_llama(
    model_path: str | Path,
    n_ctx: int = 4096,
    threads: int = 1,
    seed: int = 0,
    verbosity: int = 0,
    batch: int | None = None,
    lora: str | Path | None = None,
) -> Any:
    """An in-process llama.cpp server (`xllamacpp.Server`) over a GGUF file, with the LoRA adapter GGUF `lora` applied
    at scale 1 when given; `batch` tokens of a prompt are read per step (llama.cpp's default when None), the
    granularity at which a stop request is seen while reading."""
    import xllamacpp as xlc  # imported here so that `import agentcvr` stays light

    path = Path(model_path)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    params = xlc.CommonParams()
    params.model.path = str(path)
    if lora is not None:
        if not Path(lora).is_file():
            raise FileNotFoundError(f"no LoRA adapter GGUF at {lora}")
        adapter = xlc.CommonAdapterLoraInfo()
        adapter.path, adapter.scale = str(lora), 1.0
        params.lora_adapters = [adapter]
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: every turn of an episode lands on the same KV cache
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.sampling.seed = seed
    params.verbosity = verbosity  # 0 keeps llama.cpp's per-request logs off stderr
    if batch is not None:
        params.n_batch = params.n_ubatch = batch
    return xlc.Server(params)


def json_grammar(schema: dict[str, Any]) -> str:
    """A compact-JSON llguidance grammar for a JSON schema."""
    import xllamacpp as xlc

    return xlc.json_schema_to_grammar({**schema, "x-guidance": COMPACT_JSON})


def completion(server: Any, request: dict[str, Any], chat: bool = True) -> dict[str, Any]:
    """Run one chat completion (or, with `chat=False`, a completion of a raw prompt, text or token ids) and return it
    in the non-streamed chat shape (choices with a message, usage, timings). It is streamed with prompt progress, so
    that a run told to stop (`agentcvr.cancel`) raises `Cancelled` within one token or one prompt batch, and
    llama.cpp drops the request; a llama.cpp error (context overflow, bad grammar) raises with its message."""
    cancel.check()
    token = cancel.current()
    stream = _Stream()

    def take(chunk: Any) -> bool:  # True stops the generation
        stream.add(chunk)
        return stream.error is not None or (token is not None and token.cancelled)

    streamed = {**request, "stream": True, "return_progress": True, "stream_options": {"include_usage": True}}
    (server.handle_chat_completions if chat else server.handle_completions)(streamed, take)
    cancel.check()
    return stream.response()


class _Stream:
    """Chunks of a streamed chat completion, put back together as the one response a non-streamed call returns."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.logprobs: list[dict] = []
        self.finish: str | None = None
        self.extra: dict[str, Any] = {}  # usage and timings, from the last chunk that has them
        self.error: Any = None

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict) or "error" in chunk or not ("choices" in chunk or "prompt_progress" in chunk):
            self.error = chunk  # llama.cpp's error body (before the stream) or error event (within it)
            return
        for choice in chunk.get("choices", [])[:1]:
            delta = choice.get("delta") or {}
            self.content.append(delta.get("content") or choice.get("text") or "")  # chat, or raw-prompt completion
            self.logprobs.extend((choice.get("logprobs") or {}).get("content") or [])
            self.finish = choice.get("finish_reason") or self.finish
        self.extra |= {key: chunk[key] for key in ("usage", "timings") if chunk.get(key)}

    def response(self) -> dict[str, Any]:
        if self.error is not None or self.finish is None:
            raise RuntimeError(f"llama.cpp returned no completion: {json.dumps(self.error, default=str)[:500]}")
        choice = {"index": 0, "message": {"role": "assistant", "content": "".join(self.content)}}
        choice |= {"finish_reason": self.finish, "logprobs": {"content": self.logprobs} if self.logprobs else None}
        return {"choices": [choice], **self.extra}


class GGUFPolicy:
    """`Policy` over a local GGUF chat model; `model_path` defaults to the embedded master (Qwen2.5-Coder-1.5B)."""

    protocol = "json"

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        threads: int | None = None,
        max_tokens: int = 256,
        seed: int = 0,
        temperature: float = 0.0,
        thought_chars: int = 120,
        focus_chars: int = 160,
        min_calls: int = 2,
        scan: bool = False,
        recovery_temperature: float = 0.8,
        resamples: int = 3,
        answer_orders: int = 1,
        answer_scoring: Scoring = "letter",
        prompt_batch: int = PROMPT_BATCH,
    ):
        # every core by default: the master is the slow part of an episode on a small CPU machine
        threads = threads or min(os.cpu_count() or 1, 8)
        model = model_path or ensure_model(DEFAULT_MASTER)
        self.server = load_llama(model, n_ctx=n_ctx, threads=threads, seed=seed, batch=prompt_batch)
        # Turns before the answer shape is allowed: zero-shot, the 0.5B answers at once (the published prompts demand
        # 4 calls first; we enforce a smaller number in the grammar instead of asking).
        self.min_calls = min_calls
        # Whether the first turn is a whole-video observe of every video (`scan_turn`), before the model's own turns.
        self.scan = scan
        self.recovery_temperature, self.resamples = recovery_temperature, resamples
        # A multiple-choice answer asked again with the options in this many orders, the majority winning; off (1) by
        # default: measured on the same episodes it lost to the turn's own answer (`benchmarks/master_choice.py`
        # prints both rows), because the original option list stays in the conversation and the model carries its
        # preference for a slot of that list through every re-ask.
        self.answer_orders = answer_orders
        if answer_scoring not in ("letter", "cloze", "verify"):
            raise ValueError(f"answer_scoring must be 'letter', 'cloze' or 'verify', not {answer_scoring!r}")
        # "cloze" or "verify": a multiple-choice answer is the option whose text scores best (`option_scoring`)
        self.answer_scoring = answer_scoring
        self.max_tokens, self.seed, self.temperature = max_tokens, seed, temperature
        # ~3 characters a token for this prose and JSON; leave room for the reply.
        self.context_chars = 3 * (n_ctx - max_tokens)
        self.thought_chars, self.focus_chars = thought_chars, focus_chars
        self._grammars: OrderedDict[str, str] = OrderedDict()  # schema -> grammar, the latest EPISODES_KEPT
        # llama.cpp's timings of the latest calls (cache_n, prompt_n, speeds)
        self.timings: deque[dict[str, Any]] = deque(maxlen=TIMINGS_KEPT)
        # episode id -> (messages seen, observations elided), the latest EPISODES_KEPT episodes
        self._elided: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def grammar(
        self,
        episode: Episode,
        answer_only: bool = False,
        tools_only: bool = False,
        times: Times = "optional",
    ) -> str:
        """The grammar of one turn for this episode (built once per distinct schema)."""
        schema = turn_schema(episode, self.thought_chars, self.focus_chars, times=times)
        if answer_only:
            schema = schema["anyOf"][-1]
        elif tools_only:
            schema = {**schema, "anyOf": schema["anyOf"][:-1]}
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = json_grammar(schema)
        _keep_latest(self._grammars, key)
        return self._grammars[key]

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        length, elided = self._elided.get(episode.id, (0, 0))
        if len(messages) < length:  # a new run of this episode
            elided = 0
        fitted, elided = fit_context(messages, self.context_chars, elided)
        self._elided[episode.id] = (len(messages), elided)
        _keep_latest(self._elided, episode.id)
        turns = sum(m["role"] == "assistant" for m in messages)
        if self.scan and turns == 0 and not forced_turn(messages):  # at --max-turns 1 the first turn answers
            return PolicyOutput(content=scan_turn(episode))
        recoveries = sum(is_recovery(m) for m in messages)
        recovering = is_recovery(messages[-1]) if messages else False
        shape = {"answer_only": forced_turn(messages), "tools_only": turns < self.min_calls}
        # a scanning master zooms in after its first look; otherwise times are the model's choice, and after a
        # rejected turn (usually an impossible interval) whole videos only
        grammar = self.grammar(
            episode, **shape, times="required" if self.scan else "none" if recovering else "optional"
        )
        # Greedy decoding repeats itself: the rejected output after a re-prompt, the same call turn after turn. An
        # output that repeats an earlier turn's calls is sampled again (new seed per attempt): until it differs after
        # a rejection (up to `resamples` times), once otherwise; a valid call still repeated turns into the answer.
        earlier = {_calls(m.get("content") or "", episode) for m in messages if m["role"] == "assistant"}
        rejected = {
            _calls(m.get("content") or "", episode)
            for m, reply in zip(messages, messages[1:], strict=False)
            if m["role"] == "assistant" and is_recovery(reply)
        }
        for attempt in range(self.resamples + 1 if recovering else 2):
            request = {
                "messages": fitted,
                "max_tokens": self.max_tokens,
                "temperature": self.recovery_temperature if recovering or attempt else self.temperature,
                "seed": self.seed + 100 * recoveries + attempt,
                "cache_prompt": True,
                "grammar": grammar,
            }
            response = completion(self.server, request)
            content = response["choices"][0]["message"].get("content") or ""
            if _calls(content, episode) not in earlier:
                break
        if _calls(content, episode) in earlier - rejected and turns >= self.min_calls:
            # asking again for what it already has: nothing new to look at, so the model answers now (a 1.5B otherwise
            # repeats one valid call until the turn limit, a minute a turn on 2 cores)
            request |= {"grammar": self.grammar(episode, answer_only=True), "temperature": self.temperature}
            response = completion(self.server, request)
            content = response["choices"][0]["message"].get("content") or ""
        elif _calls(content, episode) in rejected:
            # sampling came back to a reply the loop refused: whole-video calls only, which have no interval to get
            # wrong, so no episode repeats one invalid output
            request |= {"grammar": self.grammar(episode, **shape, times="none"), "seed": request["seed"] + 1}
            response = completion(self.server, request)
            content = response["choices"][0]["message"].get("content") or ""
        usage = response.get("usage", {})
        self.timings.append(response.get("timings", {}))
        output = PolicyOutput(
            content=content,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
        if self.answer_orders > 1 and episode.task in LETTER_TASKS and len(episode.options) > 1:
            output = self._voted(output, fitted, episode)
        if self.answer_scoring != "letter" and episode.task in LETTER_TASKS and len(episode.options) > 1:
            output = self._scored(output, fitted, episode)
        return output

    def _scored(self, output: PolicyOutput, messages: list[dict], episode: Episode) -> PolicyOutput:
        """An answer turn whose letter is the option whose text scores best (the thought keeps every score)."""
        parsed = parse_turn(output.content or "", None, episode)
        if isinstance(parsed, ParseError) or not isinstance(parsed.actions[0], Answer):
            return output
        asked: list[dict[str, Any]] = []

        def ask(prompt: str, grammar: str, max_tokens: int, alternatives: int) -> list[dict]:
            request = {"messages": [*messages, {"role": "user", "content": prompt}], "max_tokens": max_tokens}
            request |= {"temperature": 0.0, "cache_prompt": True, "grammar": grammar, "logprobs": True}
            response = completion(self.server, request | {"top_logprobs": alternatives})
            asked.append(response.get("timings", {}))
            self.timings.append(asked[-1])
            tokens = (response["choices"][0].get("logprobs") or {}).get("content") or []
            if not tokens:
                raise RuntimeError("llama.cpp returned no log-probabilities for an option")
            return tokens

        def cloze(text: str) -> OptionScore:
            tokens = ask(CLOZE_PROMPT, literal_grammar(text), 4 * len(text) + 8, alternatives=1)  # its own tokens only
            return OptionScore(sum(t["logprob"] for t in tokens), len(tokens))

        def verify(text: str) -> OptionScore:
            first = ask(verify_prompt(episode, text), YES_OR_NO, 2, alternatives=20)[0]
            ranked = {t["token"].strip().lower(): t["logprob"] for t in reversed(first["top_logprobs"])}
            floor = min(ranked.values())  # a word outside the top 20 is at most as likely as the last one listed
            return OptionScore(ranked.get("yes", floor) - ranked.get("no", floor))

        result = choose(episode, self.answer_scoring, cloze if self.answer_scoring == "cloze" else verify)
        own = json.loads(output.content or "{}")["final_answer"]
        return self._replaced(output, result.letter, f"{result.summary()}; own answer {own}", asked)

    def _voted(self, output: PolicyOutput, messages: list[dict], episode: Episode) -> PolicyOutput:
        """An answer turn whose letter is the majority over re-asks in rotated option orders (the thought says so)."""
        parsed = parse_turn(output.content or "", None, episode)
        if isinstance(parsed, ParseError) or not isinstance(parsed.actions[0], Answer):
            return output
        asked: list[dict[str, Any]] = []
        grammar = self.grammar(episode, answer_only=True)

        def ask(order: list[int]) -> str:
            request = {"messages": [*messages, reask_message(episode, order)], "max_tokens": self.max_tokens}
            request |= {"temperature": 0.0, "cache_prompt": True, "grammar": grammar}
            response = completion(self.server, request)
            asked.append(response.get("timings", {}))
            self.timings.append(asked[-1])
            again = parse_turn(response["choices"][0]["message"].get("content") or "", None, episode)
            if isinstance(again, ParseError) or not isinstance(again.actions[0], Answer):
                raise RuntimeError(f"llama.cpp ignored the answer grammar: {again}")
            return again.actions[0].answer

        result = vote(episode, parsed.actions[0].answer, ask, self.answer_orders)
        return self._replaced(output, result.letter, result.summary(), asked)

    def _replaced(self, output: PolicyOutput, letter: str, summary: str, asked: list[dict]) -> PolicyOutput:
        """The answer turn with `letter` as its answer, `summary` added to its thought, and the token counts of the
        requests `asked` (their llama.cpp timings) added to its own."""
        reply = json.loads(output.content or "{}")
        reply["thought"] = f"{reply.get('thought', '')} [{summary}]".strip()
        reply["final_answer"] = letter
        return PolicyOutput(
            content=json.dumps(reply),
            prompt_tokens=output.prompt_tokens + sum(t.get("prompt_n", 0) for t in asked),
            completion_tokens=output.completion_tokens + sum(t.get("predicted_n", 0) for t in asked),
        )


ELIDED = "[older observation elided to fit the context]"


def _keep_latest(entries: OrderedDict, key: str) -> None:
    """Mark `key` as just used and drop the oldest entries past `EPISODES_KEPT`."""
    entries.move_to_end(key)
    while len(entries) > EPISODES_KEPT:
        entries.popitem(last=False)


def fit_context(
    messages: list[dict], max_chars: int, elided: int = 0, low_water: float = 0.6
) -> tuple[list[dict], int]:
    """Plain role/content messages and how many observations were elided. Past `max_chars`, the oldest observations
    are elided first (system, question and the latest turns stay), down to `low_water * max_chars`, so a long episode
    ends with an answer instead of a context-overflow error. Passing the count back as `elided` on the next turn
    keeps those elided: the prompt prefix then stays the same for several turns and llama.cpp reuses its KV cache,
    where eliding just enough every turn would change the prefix (and re-read thousands of tokens) on every turn."""
    plain = [{"role": m["role"], "content": m.get("content") or ""} for m in messages]
    total = sum(len(m["content"]) for m in plain)
    count, limit = 0, max_chars
    for message in plain[2:-2]:
        if message["role"] not in ("user", "tool") or len(message["content"]) <= len(ELIDED):
            continue
        if count >= elided:
            if total <= limit:
                break
            limit = int(low_water * max_chars)
        total -= len(message["content"]) - len(ELIDED)
        message["content"] = ELIDED
        count += 1
    return plain, count


def _calls(content: str, episode: Episode) -> str:
    """What a reply asks for, ignoring its thought: the parsed actions, or the text itself when it does not parse."""
    parsed = parse_turn(content, None, episode)
    if isinstance(parsed, ParseError):
        return content
    return json.dumps([[a.tool, a.model_dump()] for a in parsed.actions], sort_keys=True)


class GGUFChat:
    """A chat backend (`messages -> text`) over a local GGUF model: the embedded LLM simulator or augmenter."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        threads: int = 1,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
    ):
        self.server = load_llama(model_path or ensure_model(SMALL_LLM), n_ctx=n_ctx, threads=threads, seed=seed)
        self.name = f"gguf:{Path(model_path).name if model_path else SMALL_LLM}"  # cache identity
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed

    def __call__(self, messages: list[dict], json_schema: dict | None = None) -> str:
        request: dict[str, Any] = {
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "cache_prompt": True,
        }
        if json_schema is not None:
            request["grammar"] = json_grammar(json_schema)
        return completion(self.server, request)["choices"][0]["message"].get("content") or ""
