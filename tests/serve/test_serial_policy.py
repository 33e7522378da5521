"""`SerialPolicy`: one run at a time uses the local model, and a run stopped while it waits for it leaves at once."""

from __future__ import annotations

import threading

import pytest

from agentcvr import cancel
from agentcvr.interfaces import PolicyOutput
from serve.runs import SerialPolicy


class Busy:
    """A model whose turn lasts until the test lets it finish."""

    protocol = "json"

    def __init__(self) -> None:
        self.started, self.finish = threading.Event(), threading.Event()

    def act(self, messages: list[dict], episode) -> PolicyOutput:
        self.started.set()
        self.finish.wait(30)
        return PolicyOutput(content="{}")


def test_a_run_stopped_while_waiting_for_the_model_does_not_wait_for_it():
    model = Busy()
    serial = SerialPolicy(model)
    first = threading.Thread(target=serial.act, args=([], None))
    first.start()
    model.started.wait(10)  # the first run holds the model
    token = cancel.CancelToken()
    threading.Timer(0.2, lambda: token.cancel("timeout")).start()
    with cancel.scope(token), pytest.raises(cancel.Cancelled, match="timeout"):
        serial.act([], None)
    assert first.is_alive()  # it left while the first run's turn was still going
    model.finish.set()
    first.join(10)
    assert serial.act([], None).content == "{}"  # the model is free again
