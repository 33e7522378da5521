"""Scorers and rewards of the task registry, as tables with one reason per row."""

import doctest

import pytest

from agentcvr.episode import Episode, VideoRef
from agentcvr.tasks import TASK_ORDER, TASKS, get_task, registry, scoring


def episode(task, answer, **extra):
    videos = [VideoRef(index=1, duration=100), VideoRef(index=2, duration=300)]
    return Episode(
        id="x", task=task, question="?", options=["A. a", "B. b", "C. c", "D. d"], videos=videos, answer=answer, **extra
    )


def test_ten_task_kinds():
    assert list(TASKS) == TASK_ORDER == ["BU", "NC", "CC", "PEA", "PI", "FSA", "PSS", "MSR", "MOC", "CCQA"]


@pytest.mark.parametrize(
    ("task", "truth", "output", "official", "strict", "reason"),
    [
        ("BU", ["A", "C"], "AC", 1.0, 1.0, "joined letters"),
        ("BU", ["A", "C"], "CA", 0.0, 1.0, "official is raw equality; strict sorts"),
        ("BU", ["A", "C"], "A, C", 0.0, 1.0, "strict reads separated letters"),
        ("BU", ["A", "C"], "A", 0.0, 0.0, "a subset is wrong"),
        ("NC", "B", "B", 1.0, 1.0, "exact letter"),
        ("NC", "B", "B.", 0.0, 1.0, "punctuation only passes strict"),
        ("NC", "B", "Option B", 0.0, 1.0, "phrase around the letter"),
        ("NC", "B", "A or B", 0.0, 0.0, "two letters is no answer"),
        ("NC", "B ", "B", 0.0, 1.0, "real items have trailing spaces in the answer"),
        ("PSS", "3->1->2", "3->1->2", 1.0, 1.0, "exact order"),
        ("PSS", "3->1->2", "3, 1, 2", 0.0, 1.0, "strict reads other separators"),
        ("PSS", "3->1->2", "1->2->3", 0.0, 0.0, "wrong order"),
        ("FSA", [76, 90], "76,90", 1.0, 1.0, "exact interval"),
        ("FSA", [76, 90], "[76.0, 90.0]", 0.0, 1.0, "official float() fails on brackets; strict reads them"),
        ("FSA", [76, 90], "from 76s to 90s", 0.0, 1.0, "prose and 's' suffixes: strict only"),
        ("FSA", [76, 90], " 76 , 90\n", 1.0, 1.0, "float() allows surrounding whitespace"),
        ("FSA", [0, 10], "5,15", 1 / 3, 1 / 3, "IoU over the hull"),
        ("FSA", [0, 10], "soon", 0.0, 0.0, "unparseable scores 0"),
    ],
)
def test_official_and_strict_scores(task, truth, output, official, strict, reason):
    spec, ep = get_task(task), episode(task, truth)
    assert spec.official(output, ep) == pytest.approx(official), reason
    assert spec.strict(output, ep) == pytest.approx(strict), reason


@pytest.mark.parametrize(
    ("task", "truth", "output", "exact", "dense", "reason"),
    [
        ("FSA", [0, 10], "5,15", 0.0, 1 / 3, "FSA: the exact interval (the paper's reward), IoU when dense"),
        ("FSA", [0, 10], "[0, 10]", 1.0, 1.0, "the exact interval, normalized"),
        ("PSS", "1->2->3", "1->3->2", 0.0, 1 / 3, "dense PSS: share of positions right"),
        ("BU", ["A", "C"], "AB", 0.0, 1 / 3, "dense BU: Jaccard of letter sets"),
        ("NC", "B", "C", 0.0, 0.0, "choice tasks have no dense form"),
    ],
)
def test_rewards(task, truth, output, exact, dense, reason):
    spec, ep = get_task(task), episode(task, truth)
    assert spec.reward(output, ep) == pytest.approx(exact), reason
    assert spec.reward(output, ep, dense=True) == pytest.approx(dense), reason


def test_ccqa_keyword_judge_counts_coverage_and_correctness():
    ep = episode(
        "CCQA",
        "A uses a sieve; B a towel.",
        reference={"scoring_points": ["tool A", "tool B"], "point_keywords": [["sieve"], ["towel"]]},
    )
    assert get_task("CCQA").official("Video A strains with a sieve.", ep) == 0.5
    assert get_task("CCQA").official("A: sieve, B: towel", ep) == 1.0


def test_ccqa_uses_an_injected_judge():
    ep = episode("CCQA", "ref", reference={"scoring_points": ["p1", "p2"]})

    def judge(output, episode):
        return [True, True], [True, False]

    assert get_task("CCQA").official("anything", ep, judge=judge) == 0.75


def test_random_answers_are_well_formed():
    import random

    rng = random.Random(0)
    for kind in TASK_ORDER:
        spec = TASKS[kind]
        truth = {"BU": ["A"], "FSA": [1, 2], "PSS": "1->2"}.get(kind, "A")
        answer = spec.random_answer(episode(kind, truth), rng)
        assert spec.normalize(answer) is not None, kind


def test_unknown_task_names_the_valid_ones():
    with pytest.raises(KeyError, match="BU, NC"):
        get_task("XYZ")


@pytest.mark.parametrize("module", [scoring, registry])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_ccqa_keyword_dumping_does_not_pay():
    from scripts_gen.generate import generate

    script = generate("CCQA", 1, seed=0)[0]
    ep = script.episode
    keywords = [k for keys in ep.reference["point_keywords"] for k in keys]
    dump = "Video A and video B use " + ", ".join(keywords) + "."
    assert get_task("CCQA").official(str(ep.answer), ep) == 1.0  # the reference answer itself scores full
    both = " ".join(f"Video A uses {k}. Video B uses {k}." for k in keywords)
    assert get_task("CCQA").official(dump, ep) < 0.75
    assert get_task("CCQA").official(both, ep) == 0.5  # covered, but no method tied to its own video
    assert get_task("CCQA").official(dump + " word" * 400, ep) == 0.0  # far too long: covers nothing


def test_weighted_carries_crossvids_failure_rule_as_a_flag():
    nc = get_task("NC")
    ep = episode("NC", "B")
    assert nc.weighted("B", ep) == (1.0, 1.0)
    assert nc.weighted(None, ep) == (0.0, 1.0)  # a reply without an answer is kept
    assert nc.weighted(None, ep, failed=True) == (0.0, 1.0)  # `agentcvr run`: a failure scores 0
    assert nc.weighted(None, ep, failed=True, drop_failures=True) is None  # CrossVid: it leaves the denominator
    assert nc.weighted(None, ep, failed=True, drop_failures=True, strict=True) == (0.0, 1.0)  # strict never drops
    assert nc.weighted("Option B", ep, strict=True) == (1.0, 1.0)
    ccqa = get_task("CCQA")
    assert ccqa.weighted("x", episode("CCQA", "ref"), judgement=(3, 4)) == (3.0, 4.0)  # pooled judge points
    assert ccqa.weighted("x", episode("CCQA", "ref"), judgement=None) is None  # a dropped judgement
