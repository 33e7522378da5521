"""Turn batching: episodes run one per thread, and each turn they ask of a batched model waits until every live
episode has asked, then all go to the model as one batch.

A model answers a batch of turns in about the time of one, so episodes that run together cost a few batched turns
instead of one call each, while every episode still runs the real loop. Two callers: GRPO rollouts (`train/rollout.py`:
token rows sampled together) and held-out evaluation (`train/evaluate.py`: conversations through `act_batch`).

Rows go to the model in episode order (`bind`), whichever thread asks first, so a seeded sampler draws the same for
the same episode run after run. With fewer threads than episodes, a batch waits for as many turns as there are
episodes still running, up to the thread count (`finished` says one ended).

    batcher = TurnBatcher(policy.act_batch, episodes=len(scripts), threads=8)
    batcher.bind(slot); output = batcher(messages); ...; batcher.finished()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


class TurnBatcher(Generic[In, Out]):
    """Gathers one request from every live episode and answers them with one `run(requests) -> answers` call."""

    def __init__(self, run: Callable[[list[In]], list[Out]], episodes: int, threads: int | None = None):
        self.run = run
        self._left, self._threads = episodes, threads or episodes
        self._cond = threading.Condition()
        self._pending: dict[int, In] = {}
        self._results: dict[int, Out | BaseException] = {}
        self._slots: dict[int, int] = {}  # thread -> its episode's place in the run
        self.batches: list[int] = []  # the size of each batch run

    @property
    def live(self) -> int:
        """Episodes that will ask before the next batch runs: those still running, at most one per thread."""
        return min(self._left, self._threads)

    def bind(self, slot: int) -> None:
        """The calling thread runs the episode at `slot`: its requests take that row of every batch, so the rows (and
        what a seeded sampler draws for each) do not depend on which thread asked first."""
        with self._cond:
            self._slots[threading.get_ident()] = slot

    def __call__(self, request: In) -> Out:
        key = threading.get_ident()
        with self._cond:
            self._pending[key] = request
            self._run_if_ready()
            while key not in self._results:
                self._cond.wait()
            result = self._results.pop(key)
        if isinstance(result, BaseException):
            raise result
        return result

    def finished(self) -> None:
        """An episode ended: the others no longer wait for it."""
        with self._cond:
            self._left -= 1
            self._run_if_ready()

    def _run_if_ready(self) -> None:
        if not self._pending or len(self._pending) < self.live:
            return
        batch = dict(sorted(self._pending.items(), key=lambda item: self._slots.get(item[0], -1)))
        self._pending = {}
        try:
            answers = self.run(list(batch.values()))
            self._results.update(zip(batch, answers, strict=True))
        except Exception as error:  # every waiting episode records the failure
            self._results.update(dict.fromkeys(batch, error))
        self.batches.append(len(batch))
        self._cond.notify_all()
