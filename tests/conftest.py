"""Shared fixtures: a small hand-written script whose facts the tests check."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentcvr.script import Event, Script, VideoScript  # noqa: E402
from simulator.script_sim import ScriptSimulator  # noqa: E402


@pytest.fixture
def pet_script() -> Script:
    """Two videos: a cat that talks in video 1, a dog that runs in video 2; the answer is B."""
    return Script(
        id="pets-1",
        task="NC",
        question="Which video shows a dog running?",
        options=["A. Video 1", "B. Video 2"],
        answer="B",
        videos=[
            VideoScript(
                index=1,
                duration=30,
                events=[
                    Event(start=0, end=10, visual="a grey cat sleeps on a sofa", speech="good morning kitty"),
                    Event(start=20, end=25, visual="the cat drinks milk"),
                ],
            ),
            VideoScript(index=2, duration=40, events=[Event(start=5, end=12, visual="a brown dog runs in a park")]),
        ],
    )


@pytest.fixture
def simulator(pet_script: Script) -> ScriptSimulator:
    return ScriptSimulator({pet_script.id: pet_script})
