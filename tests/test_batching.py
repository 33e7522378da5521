"""`TurnBatcher`: each episode's turn takes its own row of the batch whatever order the threads ask in, so a seeded
sampler draws the same thing for the same episode run after run; with fewer threads than episodes a batch waits only
for the episodes still running; a failed batch fails every turn in it."""

from __future__ import annotations

import threading
import time

import pytest

from agentcvr.batching import TurnBatcher


def _run_threads(targets) -> None:
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads), "a thread waited for a batch that never ran"


def test_rows_follow_the_episode_order_not_the_order_threads_ask_in():
    seen: list[list[int]] = []

    def run(rows: list[int]) -> list[int]:
        seen.append(rows)
        return [row * 10 for row in rows]  # each row's answer names its episode

    batcher = TurnBatcher(run, episodes=3)
    answers: dict[int, int] = {}

    def episode(slot: int) -> None:
        batcher.bind(slot)
        time.sleep(0.05 * (2 - slot))  # the last episode asks first
        answers[slot] = batcher(slot)
        batcher.finished()

    _run_threads([lambda slot=slot: episode(slot) for slot in range(3)])
    assert seen == [[0, 1, 2]] and batcher.batches == [3]  # one batch, in episode order
    assert answers == {0: 0, 1: 10, 2: 20}  # each episode got its own row back


def test_with_fewer_threads_than_episodes_a_batch_waits_only_for_the_episodes_left():
    """Five episodes of two turns each on two threads: every batch holds the turns of the episodes in flight, two
    until the last episode runs alone."""
    batcher = TurnBatcher(lambda rows: [row + 1 for row in rows], episodes=5, threads=2)
    queue = list(range(5))
    lock = threading.Lock()
    answers: dict[int, list[int]] = {}

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                slot = queue.pop(0)
            batcher.bind(slot)
            answers[slot] = [batcher(10 * slot + turn) for turn in range(2)]
            batcher.finished()

    _run_threads([worker, worker])
    assert answers == {slot: [10 * slot + 1, 10 * slot + 2] for slot in range(5)}
    assert sum(batcher.batches) == 10 and max(batcher.batches) == 2 and batcher.batches[-1] == 1


def test_a_failed_batch_fails_every_turn_in_it():
    def broken(rows: list[int]) -> list[int]:
        raise RuntimeError("CUDA out of memory")

    batcher = TurnBatcher(broken, episodes=2)
    errors: list[str] = []

    def episode(slot: int) -> None:
        batcher.bind(slot)
        with pytest.raises(RuntimeError, match="out of memory") as raised:
            batcher(slot)
        errors.append(str(raised.value))
        batcher.finished()

    _run_threads([lambda slot=slot: episode(slot) for slot in range(2)])
    assert errors == ["CUDA out of memory"] * 2 and batcher.batches == [2]
