"""Generated questions need the videos (question-only baselines stay near chance) and can be answered from them
(the expert solves them through the real agent loop)."""

from __future__ import annotations

from statistics import mean

import pytest

from agentcvr.script import Script
from agentcvr.tasks import TASK_ORDER
from scripts_gen.checks import answerable, fit_prior, question_only, random_chance, score, uniform_chance
from scripts_gen.generate import generate

# 200 test items: two standard errors of a 1-in-4 guess are 0.06; nine baselines each get that much room and a bit.
N = 200
TOLERANCE = {"FSA": 0.06, "CCQA": 0.05}  # FSA: a scaled reference keeps a weak real-world prior (~+0.035 IoU)


@pytest.mark.slow  # hundreds of episodes per task kind, ~13 s for the ten
@pytest.mark.parametrize("task", TASK_ORDER)
def test_question_only_baselines_stay_near_chance(task):
    train, test = generate(task, N, seed=101), generate(task, N, seed=100)
    chance = mean(uniform_chance(s) for s in test)
    results = {name: value for name, value in question_only(train, test).items() if value is not None}
    assert "prior" in results
    high = {name: round(value, 3) for name, value in results.items() if value > chance + TOLERANCE.get(task, 0.08)}
    assert not high, f"{task}: question-only baselines above chance {chance:.3f}: {high}"


def test_question_only_baselines_catch_a_leak():
    """A generator whose correct option is always the longest must fail the check."""
    leaky = []
    for script in generate("NC", 60, seed=5):
        letter = "ABCD".index(script.answer)
        options = [
            o + (" and everything that follows from it" if i == letter else "") for i, o in enumerate(script.options)
        ]
        leaky.append(script.with_episode(options=options))
    results = question_only(leaky[:30], leaky[30:])
    assert results["longest"] == 1.0 and results["word prior"] == 1.0


def test_prior_learns_the_most_common_answer_per_shape():
    scripts = generate("NC", 20, seed=1)
    skewed = [s.with_episode(answer="C") for s in scripts]
    prior = fit_prior(skewed)
    assert prior.answers[("NC", 4, 4)].most_common(1)[0] == ("C", 20)
    assert question_only(skewed, skewed)["prior"] == 1.0


@pytest.mark.parametrize(
    ("task", "fields", "expected"),
    [
        ("NC", {"options": ["A. x", "B. y", "C. z", "D. w"]}, 1 / 4),  # one letter of four
        ("PI", {"options": [f"{c}. x" for c in "ABCDEF"]}, 1 / 6),  # one of six
        ("BU", {"options": ["A. a", "B. b", "C. c", "D. d"]}, 1 / 14),  # 1-3 of 4 letters, not all: 14 sets
        ("BU", {"options": ["A. a", "B. b", "C. c"]}, 1 / 6),  # 1-2 of 3 letters: 6 sets
    ],
)
def test_uniform_chance(task, fields, expected):
    script = generate(task, 1, seed=0)[0].with_episode(**fields)
    assert uniform_chance(script) == pytest.approx(expected)


def test_uniform_chance_of_orders_and_random_chance_of_intervals():
    pss = generate("PSS", 10, seed=0)
    for script in pss:
        assert uniform_chance(script) == pytest.approx(1 / [1, 1, 2, 6, 24, 120, 720][len(script.videos)])
    fsa = generate("FSA", 10, seed=0)
    assert 0.0 < mean(random_chance(s, 50) for s in fsa) < 0.2  # a random interval rarely overlaps a 10-60 s step


@pytest.mark.parametrize("task", TASK_ORDER)
def test_expert_answers_every_generated_question_through_the_agent(task):
    scripts = generate(task, 10, seed=7)
    report = answerable(scripts)
    assert report.failures == [] and report.mean == 1.0
    for script in scripts:
        result = report.results[script.id]
        assert result.failure is None and result.format_errors == 0 and not result.forced
        assert result.tool_calls <= len(script.evidence)


def test_score_uses_the_official_scorer():
    script: Script = generate("FSA", 1, seed=0)[0]
    start, end = script.answer
    assert score(script, f"{start},{end}") == 1.0
    assert score(script, None) == 0.0
    assert 0 < score(script, f"{start},{end + (end - start)}") == pytest.approx(0.5)  # IoU, not exact match
