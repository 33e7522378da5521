"""`TurnBatcher`: each episode's turn takes its own row of the batch whatever order the threads ask in, so a seeded
sampler draws the same thing for the same episode run after run."""

from __future__ import annotations

import threading
import time

from train.rollout import TurnBatcher


def test_rows_follow_the_episode_order_not_the_order_threads_ask_in():
    seen: list[list[list[int]]] = []

    def sample(rows: list[list[int]], max_new: int):
        seen.append(rows)
        return [([row[0] * 10], [0.0]) for row in rows]  # each row's "sample" names its episode

    batcher = TurnBatcher(sample, live=3)
    answers: dict[int, tuple] = {}

    def episode(slot: int, delay: float) -> None:
        batcher.bind(slot)
        time.sleep(delay)  # the last episode asks first
        answers[slot] = batcher([slot], 4)
        batcher.finished()

    threads = [threading.Thread(target=episode, args=(slot, 0.05 * (2 - slot))) for slot in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [[[0], [1], [2]]]  # one batch, in episode order
    assert answers == {0: ([0], [0.0]), 1: ([10], [0.0]), 2: ([20], [0.0])}  # each episode got its own row back
