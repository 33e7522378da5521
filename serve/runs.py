"""Agent runs off the event loop: a bounded pool of worker threads, a queue in front of it, and per-run events.

    service = RunService(policy, perception, store, settings, metrics)
    await service.admit()                          # a slot: 429 when the queue is full, 503 when the wait is too long
    run = service.launch(episode, response, 20)    # the agent starts in a worker thread; the slot frees when it ends
    async for kind, payload in run.events():       # ("step", TraceStep) ... then ("done", AnswerResponse)
        ...

A run stops when its request ends: past its time limit, when the client goes away, or when the server shuts down,
its `CancelToken` is set and the work in progress stops mid-step (the master between tokens, perception between
frames; `agentcvr.cancel`), so its slot frees within about a second. Every step is stored as it happens, so a run
that fails, times out or is stopped keeps its partial trace, and the stored trace's message says why it ended.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentcvr import cancel
from agentcvr.agent import Agent
from agentcvr.cancel import Cancelled, CancelToken, scope
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, Policy, PolicyOutput
from agentcvr.trace import EpisodeResult, Step
from serve.errors import ApiError
from serve.metrics import Metrics
from serve.retention import drop_uploads
from serve.schemas import AnswerResponse, StepOut, Timings, TraceStep
from serve.settings import Settings
from serve.store import TraceStore
from serve.thumbnails import observed_frames

log = logging.getLogger("agentcvr.serve")
LOCK_POLL = 0.05  # s between looks at a waiting run's cancel token


# why a run was stopped -> (its status, the message stored with its trace)
STOPPED = {
    "timeout": ("timeout", "the run passed its time limit and was stopped"),
    "cancelled": ("cancelled", "the client went away and the run was stopped"),
    "shutdown": ("cancelled", "the server shut down and the run was stopped"),
}


class SerialPolicy:
    """A policy that one thread may use at a time (the embedded llama.cpp model is one context)."""

    def __init__(self, policy: Policy):
        self.policy, self.protocol, self._lock = policy, policy.protocol, threading.Lock()

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        while not self._lock.acquire(timeout=LOCK_POLL):
            cancel.check()  # a run stopped while it waits for the model (another run's turn) leaves at once
        try:
            return self.policy.act(messages, episode)
        finally:
            self._lock.release()


def finished(response: AnswerResponse, result: EpisodeResult | None, status: str, message: str | None) -> None:
    """Fill in a response's outcome and timings from its steps."""
    steps = [StepOut.of(step) for step in result.steps] if result is not None else response.steps
    response.steps, response.status = list(steps), status  # type: ignore[assignment]
    response.answer = result.answer if result is not None and status == "success" else None
    response.turns = result.turns if result is not None else len({s.turn for s in steps})
    response.message = message
    response.timings = Timings(
        total_seconds=time.time() - response.created,
        policy_seconds=sum(s.policy_seconds for s in steps),
        tool_seconds=sum(s.tool_seconds for s in steps),
        prompt_tokens=sum(s.prompt_tokens for s in steps),
        completion_tokens=sum(s.completion_tokens for s in steps),
    )


def _scrubbed(step: Step, episode: Episode) -> Step:
    """The step with the server's file paths (perception errors name them) replaced by the request's video names."""
    texts = {"observation": step.observation, "error": step.error}
    for ref in episode.videos:
        for key, text in texts.items():
            if text and ref.path:
                texts[key] = text.replace(ref.path, ref.name)
    return step.model_copy(update=texts)


class Run:
    """One agent run: its stored response, its cancel token and the events a stream reads."""

    def __init__(self, response: AnswerResponse, loop: asyncio.AbstractEventLoop):
        self.response, self.loop = response, loop
        self.token = CancelToken()
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.done = asyncio.Event()

    def emit(self, kind: str, payload: Any) -> None:
        """From any thread: hand an event to the event loop."""
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, payload))

    async def events(self, deadline: float) -> AsyncIterator[tuple[str, Any]]:
        """("step", TraceStep)... then ("done", AnswerResponse); at `deadline` (unix s) the run is told to stop and
        the last event is ("done", the partial response with status timeout)."""
        while True:
            try:
                kind, payload = await asyncio.wait_for(self.queue.get(), max(0.0, deadline - time.time()))
            except TimeoutError:
                yield "done", self.time_out()
                return
            yield kind, payload
            if kind == "done":
                return

    def stop(self, reason: str) -> None:
        """Stop the run's work where it is (`reason`: timeout, cancelled or shutdown); its slot frees when it has."""
        self.token.cancel(reason)

    def time_out(self) -> AnswerResponse:
        """Stop the run and return the partial trace now, with status timeout."""
        self.stop("timeout")
        snapshot = self.response.model_copy(deep=True)
        finished(snapshot, None, *STOPPED["timeout"])
        return snapshot


class RunService:
    """Owns the shared policy and perception (loaded once), the worker pool, the queue and the trace store."""

    def __init__(self, policy: Policy, perception: Perception, store: TraceStore, settings: Settings, metrics: Metrics):
        self.policy, self.perception, self.store, self.settings, self.metrics = (
            policy,
            perception,
            store,
            settings,
            metrics,
        )
        self._pool = ThreadPoolExecutor(settings.max_concurrent, thread_name_prefix="agent")
        self._slots = asyncio.Semaphore(settings.max_concurrent)
        self._waiting = 0
        self.running = 0
        self._agents: dict[int, Agent] = {}
        self._live: set[Run] = set()

    @property
    def alive(self) -> bool:
        return not self._pool._shutdown  # noqa: SLF001 (no public flag)

    async def admit(self) -> None:
        """Take a run slot (released when the run's worker ends): 429 if the queue is full, 503 after
        `queue_timeout` s of waiting; both with Retry-After."""
        retry = {"Retry-After": str(max(1, int(self.settings.queue_timeout)))}
        if self._slots.locked() and self._waiting >= self.settings.max_queue:
            slots, queue = self.settings.max_concurrent, self.settings.max_queue
            waiting = f"the queue is full ({self._waiting} of {queue} waiting)" if queue else "this server queues none"
            raise ApiError(429, "busy", f"all {slots} run slots are busy and {waiting}; retry later", retry)
        self._waiting += 1
        self.metrics.queue_depth.set(self._waiting)
        try:
            await asyncio.wait_for(self._slots.acquire(), self.settings.queue_timeout)
        except TimeoutError:
            raise ApiError(503, "unavailable", "no run slot freed up in time; retry later", retry) from None
        finally:
            self._waiting -= 1
            self.metrics.queue_depth.set(self._waiting)

    def agent(self, max_turns: int) -> Agent:
        if max_turns not in self._agents:
            self._agents[max_turns] = Agent(self.policy, self.perception, Limits(max_turns=max_turns))
        return self._agents[max_turns]

    def launch(self, episode: Episode, response: AnswerResponse, max_turns: int) -> Run:
        """Store the run as `running` and start it in a worker thread; its events end with ("done", response)."""
        run = Run(response, asyncio.get_running_loop())
        self.store.save(response)
        future = run.loop.run_in_executor(self._pool, self._work, run, episode, max_turns)
        self.running += 1
        self._live.add(run)
        future.add_done_callback(lambda _: self._ended(run))
        return run

    async def wait(self, run: Run) -> AnswerResponse:
        """The response of a run; at `request_timeout` the partial trace with status timeout."""
        async for kind, payload in run.events(self.deadline(run)):
            if kind == "done":
                return payload
        raise AssertionError("a run's events always end with 'done'")

    def _ended(self, run: Run) -> None:
        self.running -= 1
        self._live.discard(run)
        self._slots.release()
        run.done.set()

    def release(self) -> None:
        """Give back a slot taken by `admit` for a run that was never launched."""
        self._slots.release()

    def deadline(self, run: Run) -> float:
        return run.response.created + self.settings.request_timeout

    def _work(self, run: Run, episode: Episode, max_turns: int) -> None:
        response, index = run.response, 0
        deadline = response.created + self.settings.request_timeout

        def on_step(step: Step) -> None:  # in the worker thread, as each step is recorded
            nonlocal index
            step = _scrubbed(step, episode)
            self.metrics.observe_step(step)
            if step.kind == "tool" and step.tool == "observe" and self.settings.thumbnails:
                frames = observed_frames(self.perception, episode, step.arguments, self.settings.thumbnails)
                if frames:
                    self.store.add_frames(response.trace_id, index, int(step.arguments["video"]), frames)
            shown = StepOut.of(step)
            response.steps.append(shown)
            self.store.append_step(response.trace_id, shown)
            run.emit("step", TraceStep(index=index, step=shown))
            index += 1
            if time.time() > deadline:
                run.stop("timeout")
            run.token.check()

        result, status, message = None, "error", None
        try:
            run.token.check()
            with scope(run.token):
                result = self.agent(max_turns).run(episode, on_step=on_step)
            result.steps = [_scrubbed(step, episode) for step in result.steps]
            status = "success" if result.answer is not None else "error"
            errors = [s.error for s in result.steps if s.error]
            detail = f" ({errors[-1][:300]})" if errors else ""
            message = None if result.answer is not None else f"no answer: {result.failure}{detail}"
        except Cancelled as stopped:
            status, message = STOPPED.get(stopped.reason, STOPPED["cancelled"])
        except Exception as error:  # the graph itself failing: keep what was recorded
            log.error("run %s failed: %s", response.trace_id, type(error).__name__)
            message = f"the agent failed: {type(error).__name__}"
        finished(response, result, status, message)
        self.store.save(response)
        if not self.settings.keep_uploads:
            drop_uploads(self.settings, response.trace_id)  # the trace keeps its thumbnails; the videos can go
        self.metrics.runs.labels(status).inc()
        run.emit("done", response)

    def stop_all(self, reason: str = "shutdown") -> None:
        """Stop every run in progress (the server is going down): each stores its partial trace and frees its slot."""
        for run in list(self._live):
            run.stop(reason)

    def close(self, grace: float = 5.0) -> None:
        """Stop the runs, give their workers `grace` s to store their traces, and shut the pool down."""
        self.stop_all("shutdown")
        self._pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.time() + grace
        for thread in list(self._pool._threads):  # noqa: SLF001 (no public way to join with a timeout)
            thread.join(max(0.0, deadline - time.time()))
