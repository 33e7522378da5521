"""The agent loop as a predictor (`eval.runner`): `agentcvr run` over generated episodes, `eval crossvid --mode agent`
and `eval synth` over CrossVid-style items all ask it the same way.

The loop is synchronous (LangGraph over blocking policy/perception calls), so each item runs on a worker thread
(`agentcvr.engine.in_thread`: a try past its timeout tells the thread to stop); `workers` bounds how many run at
once, 1 for a model loaded in this process (llama.cpp and torch policies have one slot). A policy backend failure
(HTTP error, OOM) is raised so the engine retries the item, then records it as failed; an episode that ends without
an answer (malformed output, turn limit) is a reply with no output: scored 0.

    predictor, close = agent_predictor(policy_part, perception_part, Limits(), scripts, concurrency=8)
    records = await run_items([EpisodeItem(e) for e in episodes], predictor, out, config, spec=spec,
                              grade=grade_episode)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agentcvr.agent import Agent
from agentcvr.components import SINGLE_SLOT, make_perception, make_policy
from agentcvr.engine import in_thread
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits
from agentcvr.script import Script
from agentcvr.spec import Component
from agentcvr.tasks import get_task
from agentcvr.trace import EpisodeResult
from eval.record import Record
from eval.runner import FailedTry, Reply


class PolicyBackendError(FailedTry):
    """The policy's backend failed during an episode (the trace up to the failure goes with it)."""


def question_digest(episode: Episode) -> str:
    """What was asked (task, question, options, truth), hashed: generated ids repeat across seeds, questions do not."""
    asked = episode.model_dump(mode="json", include={"task", "question", "options", "answer"})
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class EpisodeItem:
    """A generated episode as an item, keyed by its id; resume checks its question digest."""

    episode: Episode
    error: str | None = None

    @property
    def key(self) -> str:
        return self.episode.id

    @property
    def task(self) -> str:
        return self.episode.task

    def fields(self) -> dict[str, Any]:
        return {"item_id": self.episode.id, "gold": self.episode.answer, "question": question_digest(self.episode)}


def score_episode(record: Record, episode: Episode) -> Record:
    """The registry's official and strict scores of an agent run's record, computed once with the whole episode
    (the keyword judge reads its reference): a failure (no reply, or no answer) scores 0 in both."""
    task, failed = get_task(record.task), record.status != "ok"
    official = task.weighted(record.output, episode, failed=failed)
    strict = task.weighted(record.output, episode, strict=True, failed=failed)
    assert official is not None and strict is not None  # failures count here
    return record.model_copy(update={"official": official[0], "strict": strict[0]})


async def grade_episode(item: EpisodeItem, record: Record) -> Record:
    """`score_episode` as the runner's grade step."""
    return score_episode(record, item.episode)


class AgentPredictor:
    """The agent loop on worker threads; a policy error raises (to be retried) with the episode's partial trace.
    With a `reference` agent (the same policy through another perception: `eval fidelity`'s simulator) each item
    runs there first, on the same thread, and the reply carries both traces."""

    traces = True

    def __init__(self, agent: Agent, workers: int = 1, reference: Agent | None = None):
        self.agent, self.reference = agent, reference
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="agent")

    async def predict(self, item: Any) -> Reply:
        assert item.episode is not None  # items that cannot be built never reach a predictor
        if self.reference is None:
            result = await in_thread(self._pool, lambda: self.agent.run(item.episode))
            return Reply(output=_finished(result).answer, result=result)
        reference = _finished(await in_thread(self._pool, lambda: self.reference.run(item.episode)), "reference")
        result = _finished(await in_thread(self._pool, lambda: self.agent.run(item.episode)))
        return Reply(output=result.answer, result=result, reference=reference)

    def close(self, wait: bool = False) -> None:
        """Stop the threads; `wait` for them (a run whose items were never stopped mid-way has none left running)."""
        self._pool.shutdown(wait=wait, cancel_futures=True)


def _finished(result: EpisodeResult, run: str = "") -> EpisodeResult:
    """The episode's result, or `PolicyBackendError` when its policy failed (the partial trace goes with it, unless
    it is the reference run's: a record's trace is the main run's)."""
    if result.failure != "policy_error":
        return result
    error = result.steps[-1].error if result.steps else "policy failed"
    if run:
        raise PolicyBackendError(f"{error} (in the {run} run)")
    raise PolicyBackendError(error, result)


def agent_predictor(
    policy: Component,
    perception: Component,
    limits: Limits,
    scripts: Mapping[str, Script] | None = None,
    concurrency: int = 1,
    reference: Component | None = None,
) -> tuple[AgentPredictor, Callable[[], None]]:
    """The agent over the built components, on `concurrency` threads (1 for a single-slot policy), and a function
    that releases it; with `reference`, the same policy object also runs through that perception. Raises what the
    builders raise (`ValueError`, `FileNotFoundError`)."""
    chosen = make_policy(policy, scripts)
    backends = [make_perception(part, scripts) for part in (perception, reference) if part is not None]
    workers = 1 if policy.name.partition(":")[0] in SINGLE_SLOT else concurrency
    compared = Agent(chosen, backends[1], limits) if reference is not None else None
    predictor = AgentPredictor(Agent(chosen, backends[0], limits), workers, reference=compared)

    def close() -> None:
        predictor.close()
        for backend in backends:
            if hasattr(backend, "close"):
                backend.close()

    return predictor, close
