"""GRPO's completion budget against the teacher's episodes: measured through the real loop and simulator, and a
budget that cuts a kind's episodes refused before a run is spent on it."""

from __future__ import annotations

import pytest

from agentcvr.interfaces import Limits
from agentcvr.policies.scan_teacher import ScanTeacher
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.budget import check_completion_budget, teacher_completion_tokens


def characters(messages: list[dict], generation_prompt: bool) -> int:
    """A stand-in tokenizer: one token per character of every message, and one for the generation prompt."""
    return sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in messages) + int(
        generation_prompt
    )


def test_the_teachers_completion_is_what_follows_its_first_prompt_and_grows_with_its_looks():
    scripts = [generate_one("NC", i, 10000) for i in range(2)] + [generate_one("PEA", 0, 10000)]
    table = {s.id: s for s in scripts}
    lengths = teacher_completion_tokens(
        ScanTeacher(table), ScriptSimulator(table), scripts, Limits(max_turns=4, max_observation_chars=600), characters
    )
    assert sorted(lengths) == ["NC", "PEA"] and len(lengths["NC"]) == 2 and len(lengths["PEA"]) == 1
    assert min(lengths["NC"]) > max(lengths["PEA"])  # four looks and four listens against three looks
    short = teacher_completion_tokens(
        ScanTeacher(table),
        ScriptSimulator(table),
        scripts[:1],
        Limits(max_turns=4, max_observation_chars=100),
        characters,
    )
    assert short["NC"][0] < lengths["NC"][0]  # shorter observations, shorter completions


def test_a_budget_that_cuts_a_kind_is_refused_naming_it_and_the_budget_that_holds_it():
    lengths = {"NC": [2200, 2386, 2100, 2300], "PEA": [780, 810, 790, 800], "PI": [800, 1600, 900, 950]}
    check_completion_budget(lengths, 2560, "scan")  # holds every episode
    check_completion_budget({"PI": lengths["PI"]}, 1536, "scan")  # one PI episode of four cut: tolerated
    with pytest.raises(ValueError) as refused:
        check_completion_budget(lengths, 1536, "scan")
    message = str(refused.value)
    assert "grpo.max_completion_length=1536 cuts the scan teacher's episodes (NC: 4 of 4, up to 2386 tokens)" in message
    assert "PEA" not in message and "PI" not in message
    assert "at least 2560" in message  # 2,386 rounded up to 256s
