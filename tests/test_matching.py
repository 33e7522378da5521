"""Answers matched from observed sentences (FSA's segment, CCQA's contrasts): real MiniLM vectors, real simulator
looks made by the scan teacher, scored by the task registry."""

from __future__ import annotations

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.agent import Agent
from agentcvr.episode import Episode, VideoRef
from agentcvr.interfaces import Limits
from agentcvr.matching import contrasts, matching_segment
from agentcvr.models import READER_BASE, ensure_model
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.reading import evidence_lines, evidence_text, reads, reference_segment, seen_from
from agentcvr.sentences import SentenceEncoder
from agentcvr.tasks import TASKS
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def encoder():
    return SentenceEncoder(ensure_model(READER_BASE, progress=False))


def _scanned(script) -> list:
    """The scan teacher's looks at one episode, through the real simulator."""
    result = Agent(ScanTeacher({script.id: script}), ScriptSimulator({script.id: script}), Limits(max_turns=4)).run(
        script.episode
    )
    looks = [(s.arguments, s.tool, s.observation) for s in result.steps if s.kind == "tool"]
    return [
        seen_from(Listen(**args) if tool == "listen" else Observe(**args), observation)
        for args, tool, observation in looks
    ]


def test_the_reference_segment_is_read_from_either_context():
    videos = [VideoRef(index=1, duration=60.0), VideoRef(index=2, duration=60.0)]
    generated = Episode(
        id="g", task="FSA", question="q", videos=videos, context={"Reference segment in video 1": "12-20.5 s"}
    )
    crossvid = Episode(id="c", task="FSA", question="q", videos=videos, context={"ref_segment": [3, 7]})
    assert reference_segment(generated) == (12.0, 20.5) and reference_segment(crossvid) == (3.0, 7.0)
    assert not reads(Episode(id="n", task="FSA", question="q", videos=videos))  # no segment: nothing to match


def test_fsa_finds_in_video_2_the_step_video_1_showed(encoder):
    scripts = generate("FSA", 6, seed=10000)
    scores = [
        TASKS["FSA"].official(
            matching_segment(s.episode, evidence_lines(evidence_text(_scanned(s))), encoder) or "0,0", s.episode
        )
        for s in scripts
    ]
    assert sum(score == 1.0 for score in scores) >= 5  # the exact interval: the matched line's stamp


def test_ccqa_writes_contrasts_that_name_each_video(encoder):
    scripts = generate("CCQA", 6, seed=10000)
    answers = [contrasts(s.episode, evidence_lines(evidence_text(_scanned(s))), encoder) for s in scripts]
    named = [("A", "B") if "video A" in s.episode.question else ("1", "2") for s in scripts]  # as the question does
    assert all(
        a and f"In video {x}, " in a and f", whereas in video {y}, " in a
        for a, (x, y) in zip(answers, named, strict=True)
    )
    scores = [TASKS["CCQA"].official(a, s.episode) for a, s in zip(answers, scripts, strict=True)]
    assert sum(scores) / len(scores) > 0.3  # random's fixed sentence scores 0
    assert TASKS["CCQA"].official("Both videos show cooking steps.", scripts[0].episode) == 0.0
