"""Agent mode: the master-agent loop (any policy, real perception) as a CrossVid predictor.

The loop is synchronous (LangGraph over blocking policy/perception calls), so each item runs in a worker thread;
`workers` bounds how many run at once (embedded llama.cpp policies have one slot: use 1).
A policy backend failure (HTTP error, OOM) is raised so the runner retries the item; an episode that ends without an
answer (malformed output, turn limit) is a reply with no output: scored 0, kept in the official denominator.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from agentcvr.agent import Agent
from eval.crossvid.loader import CrossVidItem
from eval.crossvid.runner import Reply


class PolicyBackendError(RuntimeError):
    """The policy's backend failed during an episode."""


class AgentPredictor:
    def __init__(self, agent: Agent, workers: int = 1):
        self.agent = agent
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="agent")

    async def predict(self, item: CrossVidItem) -> Reply:
        assert item.episode is not None  # items that cannot be built never reach a predictor
        result = await asyncio.get_running_loop().run_in_executor(self._pool, self.agent.run, item.episode)
        if result.failure == "policy_error":
            raise PolicyBackendError(result.steps[-1].error if result.steps else "policy failed")
        return Reply(output=result.answer, trace=result.model_dump(mode="json"))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
