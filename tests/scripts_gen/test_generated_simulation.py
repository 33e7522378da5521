"""The rule-based simulator on generated scripts: evidence facts show up where the script says, nothing shows up
outside the queried video and interval, and the indexed lookup answers exactly like a plain scan."""

from __future__ import annotations

import math
import random
import re
from functools import cache

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.script import Event, Script
from agentcvr.tasks import TASK_ORDER
from scripts_gen.checks import missing_evidence
from scripts_gen.generate import generate
from simulator.script_sim import NO_SPEECH, NO_VISUAL, ScriptSimulator, terms

LINE = re.compile(r"^\[(\d+\.\d)s? - (\d+\.\d)s?\]:? (.*)$")


@cache
def scripts() -> list[Script]:
    return generate("all", 12, seed=21)


@cache
def simulator() -> ScriptSimulator:
    return ScriptSimulator({s.id: s for s in scripts()})


@pytest.mark.parametrize("task", TASK_ORDER)
def test_evidence_facts_appear_in_simulator_output(task):
    for script in (s for s in scripts() if s.task == task):
        assert missing_evidence(script, simulator()) == []


def test_missing_evidence_reports_a_fact_that_is_not_there():
    script = next(s for s in scripts() if s.task == "NC")
    item = script.evidence[0].model_copy(update={"fact": "a purple elephant tap-dances"})
    broken = script.model_copy(update={"evidence": [item]})
    assert len(missing_evidence(broken)) == 1


def _queries(rng: random.Random, script: Script, count: int) -> list[Observe | Listen]:
    queries: list[Observe | Listen] = []
    for _ in range(count):
        video = rng.choice(script.videos)
        start = round(rng.uniform(0, video.duration * 0.95), 1)
        end = round(min(video.duration, start + rng.choice([0.5, 3, 20, 120, video.duration])), 1)
        if end <= start:
            continue
        focus = rng.choice(["", "what the chef uses", "obj_2", "who is talking", "the person attaches the wheel"])
        queries.append(
            Observe(video=video.index, start=start, end=end, focus=focus)
            if rng.random() < 0.7
            else Listen(video=video.index, start=start, end=end)
        )
    return queries


def _overlapping(script: Script, query: Observe | Listen) -> list[Event]:
    return [e for e in script.videos[query.video - 1].events if e.start < query.end and e.end > query.start]


def test_no_leak_outside_the_queried_video_and_interval():
    rng = random.Random(0)
    for script in scripts():
        episode = script.episode
        for query in _queries(rng, script, 15):
            observe = isinstance(query, Observe)
            text = simulator().observe(episode, query) if observe else simulator().listen(episode, query)
            allowed = {e.visual if observe else e.speech for e in _overlapping(script, query)}
            if text in (NO_VISUAL, NO_SPEECH):
                assert not allowed - {None}, f"{script.id}: {text!r} but {allowed} overlap {query}"
                continue
            for line in text.splitlines():
                start, end, said = LINE.match(line).groups()  # type: ignore[union-attr]
                assert query.start - 0.05 <= float(start) <= float(end) <= query.end + 0.05, (script.id, line)
                assert said in allowed, f"{script.id}: {said!r} is not in video {query.video} [{query}]"


def _plain_scan(script: Script, query: Observe | Listen, max_events: int = 8) -> list[str]:
    """The simulator's documented behaviour, written the slow obvious way."""
    hits = _overlapping(script, query)
    if isinstance(query, Listen):
        return [e.speech for e in sorted(hits, key=lambda e: (e.start, e.end)) if e.speech]
    if len(hits) > max_events:
        video = script.videos[query.video - 1].events
        focus = terms(query.focus)

        def relevance(event: Event) -> float:  # shared focus terms, each weighted by its rarity in the video
            shared = focus & terms(event.visual)
            return round(
                sum(math.log(1 + len(video) / sum(term in terms(e.visual) for e in video)) for term in shared), 9
            )

        hits = sorted(hits, key=lambda e: (-relevance(e), e.start))[:max_events]
    return [e.visual for e in sorted(hits, key=lambda e: (e.start, e.end))]


@pytest.mark.slow  # every generated script both ways, ~25 s
def test_indexed_lookup_matches_a_plain_scan():
    rng = random.Random(1)
    checked = 0
    for script in scripts():
        episode = script.episode
        for query in _queries(rng, script, 10):
            observe = isinstance(query, Observe)
            text = simulator().observe(episode, query) if observe else simulator().listen(episode, query)
            said = [] if text in (NO_VISUAL, NO_SPEECH) else [LINE.match(x).group(3) for x in text.splitlines()]  # type: ignore[union-attr]
            assert said == _plain_scan(script, query), (script.id, query)
            checked += 1
    assert checked > 1000
