"""The in-memory loop over many items (agentcvr/runner.py): item order, errors, threads, the progress bar."""

import io
import threading

import pytest
from rich.console import Console

from agentcvr.runner import map_with_progress


def recording_console() -> Console:
    return Console(file=io.StringIO(), record=True, width=120)


def test_results_come_back_in_item_order_and_reach_on_result_in_the_calling_thread():
    others_kept = threading.Event()
    seen = []

    def run_one(n: int) -> int:
        if n == 0:
            assert others_kept.wait(10)  # item 0 ends after the others reached on_result
        return n * n

    def keep(n: int, result: int) -> None:
        seen.append((n, result, threading.get_ident()))
        if len(seen) == 3:
            others_kept.set()

    assert map_with_progress(run_one, [0, 1, 2, 3], threads=4, on_result=keep) == [0, 1, 4, 9]
    assert seen[-1][:2] == (0, 0) and sorted(n for n, _, _ in seen) == [0, 1, 2, 3]
    assert {ident for _, _, ident in seen} == {threading.get_ident()}


def test_the_bar_shows_the_label_the_count_and_the_running_summary():
    console = recording_console()
    results = map_with_progress(
        lambda n: f"new {n}", [1, 2, 3], describe=lambda rs: f"{len(rs)} results so far", label="items", console=console
    )
    assert results == ["new 1", "new 2", "new 3"]
    text = console.export_text()
    assert "items 3 results so far" in text and "3/3" in text


def test_an_error_stops_the_run_after_what_finished_is_kept():
    kept = []

    def run_one(n: int) -> int:
        if n == 2:
            raise RuntimeError("perception crashed on 2")
        return n

    with pytest.raises(RuntimeError, match="crashed on 2"):
        map_with_progress(run_one, [1, 2, 3], on_result=lambda n, r: kept.append(r), progress=False)
    assert kept == [1]  # in order, one thread: 3 never started


def test_with_threads_the_running_items_still_end_and_are_kept():
    second_running, failing = threading.Event(), threading.Event()
    kept = []

    def run_one(n: int) -> int:
        if n == 0:
            assert second_running.wait(10)
            failing.set()
            raise RuntimeError("item 0 failed")
        if n == 1:
            second_running.set()
            assert failing.wait(10)  # still running when item 0 fails
        return n

    with pytest.raises(RuntimeError, match="item 0 failed"):
        map_with_progress(run_one, list(range(6)), threads=2, on_result=lambda n, r: kept.append(n), progress=False)
    assert 1 in kept and 0 not in kept


def test_threads_must_be_positive():
    with pytest.raises(ValueError, match="threads must be at least 1"):
        map_with_progress(str, [1], threads=0)
