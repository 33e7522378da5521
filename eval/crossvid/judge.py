"""The CCQA judge: the official scoring prompt sent to any OpenAI-compatible server, and the official reply parsing.

    judge = Judge(base_url="http://localhost:8000/v1")          # model: the first one the server lists
    record = await judge.score(item_raw, output)                 # JudgeRecord(reply=...) or (error=...)
    run_items(items, predictor, out, grade=judged(judge))        # every CCQA reply judged as it finishes
    parse_judgement(record.reply)                                # (score, denominator) or None (item dropped)

Parsing follows score_CCQA.py: the text inside `<score>...</score>` (first match, stripped) is `json.loads`ed; the item
score is `sum(coverage + correctness)` (`1`/`0` count as numbers, a string entry drops the item); the denominator is
`2 * len(coverage)`, not the number of scoring points. A length mismatch is kept (the record is appended before the
assert). The call is made once, never retried.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import httpx

from eval.record import JudgeRecord, Record

SCORE_PROMPT = """
You are asked to score the output of a model, given the following information:
- Question: {QUESTION}
- Standard Answer: {ANSWER}
- Scoring Points: {POINTS}
- Model's Output: {OUTPUT}

Please perform the following two-part scoring:
Part 1: Coverage of Scoring Points
- For each scoring point, determine whether it is covered by the Model's Output.
- Mark as covered (true) **only if** the scoring point is addressed **explicitly, independently, and clearly**.
- If the mention is vague, partial, or ambiguous, consider it **not covered**.

Part 2: Accuracy of Details
- For each covered scoring point, compare the details in the Model's Output to the Standard Answer.
- Mark as correct (true) **only if** the details are **fully accurate and consistent** with the Standard Answer, \
without any error, omission, or ambiguity.
- If the answer is partially correct, too broad/narrow, or not strictly consistent, mark it as **not correct** (false).
- For scoring points not covered, mark as incorrect.

Format your answer in a json format as follows:
{{
    "coverage": [true, false, true, ...],
    "correctness": [true, false, false, ...]
}}
The length of 'coverage' and 'correctness' lists should match the number of scoring points.
Wrap the json output within <score></score> tags.

Your answer:
"""
_SCORE_TAG = re.compile(r"<score>\s*(.*?)\s*</score>", re.DOTALL)


def judge_prompt(raw: dict, output: str | None) -> str:
    """The official prompt; scoring points go in as a Python list repr, the output as `str()` (None -> 'None')."""
    return SCORE_PROMPT.format(
        QUESTION=raw["question"], ANSWER=raw["answer"], POINTS=raw["scoring_points"], OUTPUT=output
    )


def parse_judgement(reply: str | None) -> tuple[float, int] | None:
    """(item score, denominator) as score_CCQA.py computes them, or None when it drops the item.

    >>> parse_judgement('<score>{"coverage": [true, false], "correctness": [true, false]}</score>')
    (2, 4)
    >>> parse_judgement('<score>{"coverage": ["true"], "correctness": [true]}</score>') is None
    True
    """
    if not isinstance(reply, str):
        return None
    match = _SCORE_TAG.search(reply)
    try:
        data = json.loads(match.group(1).strip() if match else "")
        total = sum(data["coverage"] + data["correctness"])
        denominator = 2 * len(data["coverage"])
    except (json.JSONDecodeError, TypeError, KeyError, IndexError):
        return None
    return total, denominator


def strict_judgement(reply: str | None, points: int) -> tuple[float, int]:
    """The strict reading: a dropped judgement scores 0 of 2 x points; true / 1 / "true" are true; correctness counts
    only where covered; both lists are cut to the number of scoring points."""
    if not isinstance(reply, str) or (match := _SCORE_TAG.search(reply)) is None:
        return 0.0, 2 * points
    try:
        data = json.loads(match.group(1))
        covered = [_true(v) for v in data["coverage"]][:points]
        correct = [_true(v) for v in data["correctness"]][:points]
    except (json.JSONDecodeError, TypeError, KeyError):
        return 0.0, 2 * points
    return float(sum(covered) + sum(c and v for c, v in zip(covered, correct, strict=False))), 2 * points


def _true(value: Any) -> bool:
    """true, 1 and "true" all mean true in the strict reading."""
    return str(value).strip().lower() in ("true", "1")


class Judge:
    """The official judge against an OpenAI-compatible server (a client is injected in tests and shared by items)."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str = "EMPTY", timeout: float = 300.0):
        self.base_url, self.model = base_url.rstrip("/"), model
        self._client = httpx.AsyncClient(timeout=timeout, headers={"Authorization": f"Bearer {api_key}"})

    async def _model(self) -> str:
        if self.model is None:  # the official scorer takes the first model the server lists
            reply = await self._client.get(f"{self.base_url}/models")
            reply.raise_for_status()
            self.model = reply.json()["data"][0]["id"]
        return self.model

    async def score(self, raw: dict, output: str | None) -> JudgeRecord:
        try:
            model = await self._model()
            body: dict[str, Any] = {
                "model": model,
                "messages": [
                    {"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": judge_prompt(raw, output)},
                ],
                "max_tokens": 8192,
                "temperature": 0.0,
                "top_p": 0.95,
            }
            reply = await self._client.post(f"{self.base_url}/chat/completions", json=body)
            reply.raise_for_status()
            return JudgeRecord(model=model, reply=reply.json()["choices"][0]["message"]["content"])
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as error:
            return JudgeRecord(model=self.model or "", error=f"{type(error).__name__}: {error}")

    async def aclose(self) -> None:
        await self._client.aclose()


class ChatJudge:
    """The official judge prompt and parsing over a local chat backend (`messages -> text`, e.g. the embedded GGUF
    model): the offline default. Calls run one at a time in a worker thread (llama.cpp has one slot)."""

    def __init__(self, chat: Any, name: str):
        self.chat, self.name = chat, name
        self._lock = asyncio.Lock()

    async def score(self, raw: dict, output: str | None) -> JudgeRecord:
        messages = [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": judge_prompt(raw, output)},
        ]
        try:
            async with self._lock:
                reply = await asyncio.to_thread(self.chat, messages)
            return JudgeRecord(model=self.name, reply=reply)
        except Exception as error:  # a local backend failing is recorded like an API error: the item drops
            return JudgeRecord(model=self.name, error=f"{type(error).__name__}: {error}")

    async def aclose(self) -> None:
        return None


class Scores(Protocol):
    async def score(self, raw: dict, output: str | None) -> JudgeRecord: ...


def judged(judge: Scores) -> Callable[[Any, Record], Awaitable[Record]]:
    """The runner's `grade` step for CrossVid items: a CCQA reply goes to the judge, whose raw verdict is recorded
    (scored later, `eval.summary`); other records pass unchanged."""

    async def grade(item: Any, record: Record) -> Record:
        if item.task != "CCQA" or record.status != "ok":
            return record
        return record.model_copy(update={"judge": await judge.score(item.raw, record.output)})

    return grade
