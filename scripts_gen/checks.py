"""Checks that generated questions need the videos and can be answered from them.

- `question_only`: baselines that see only the question, the options and the video count (answer-position prior,
  longest/shortest option, word overlap with the question, odd-one-out, a word prior learned on a training split,
  and per-task shortcuts: identity order, copying or rescaling the FSA reference segment, echoing the question) must
  score near `uniform_chance`.
- `answerable`: the scripted expert, run through the real agent loop (`agentcvr.agent.Agent`) against the
  `ScriptSimulator`, must score ~1 with the official scorer (the keyword judge for CCQA).
- `missing_evidence`: every evidence fact appears in the simulator's answer for its interval.

    python -m scripts_gen.checks --n 300
"""

from __future__ import annotations

import argparse
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import mean, median

from agentcvr.actions import Listen, Observe
from agentcvr.agent import Agent
from agentcvr.interfaces import Limits, Policy
from agentcvr.policies.expert import ExpertPolicy
from agentcvr.runner import map_with_progress
from agentcvr.script import Script
from agentcvr.tasks import TASK_ORDER, get_task
from agentcvr.trace import EpisodeResult
from simulator.script_sim import ScriptSimulator

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    "a an the of in on at to and or is are was were what which who how does do with for from by video videos".split()
)


def score(script: Script, output: str | None) -> float:
    """The official CrossVid score of one output (keyword judge for CCQA); no output scores 0."""
    return get_task(script.task).official(output or "", script.episode)


def random_chance(script: Script, draws: int = 200) -> float:
    """Expected score of the task's random well-formed answer (what `RandomPolicy` should get), by sampling."""
    rng = random.Random(f"chance:{script.id}")
    episode, task = script.episode, get_task(script.task)
    return mean(task.official(task.random_answer(episode, rng), episode) for _ in range(draws))


def uniform_chance(script: Script) -> float:
    """Expected score of a uniform guess over the answer space: 1/options, 1/#letter sets, 1/n! orders.

    BU sets have 1-3 letters and never all of them (14 sets of 4 options, 6 of 3); FSA and CCQA have no finite
    space, so their chance is the random well-formed answer's.
    """
    if script.task == "BU":
        n = len(script.options)
        return 1 / sum(math.comb(n, k) for k in range(1, min(3, n - 1) + 1))
    if script.task == "PSS":
        return 1 / math.factorial(len(script.videos))
    if script.task in ("FSA", "CCQA"):
        return random_chance(script)
    return 1 / len(script.options)


# ---------------------------------------------------------------------------------------------- question-only
def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _texts(script: Script) -> list[str]:
    return [re.sub(r"^[A-F]\.\s*", "", option) for option in script.options]


@dataclass
class Prior:
    """What a question-only model can learn from a training split: answer frequencies per shape, option words."""

    answers: dict[tuple, Counter] = field(default_factory=dict)  # (task, #options, #videos) -> official answers
    word_odds: dict[str, dict[str, float]] = field(default_factory=dict)  # task -> word -> log odds of correct
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # FSA median answer


def fit_prior(train: Iterable[Script]) -> Prior:
    prior = Prior()
    hits: dict[str, Counter] = {}
    misses: dict[str, Counter] = {}
    fsa: list[Sequence[float]] = []
    for script in train:
        official = get_task(script.task).official_form(script.answer)
        prior.answers.setdefault(_shape(script), Counter())[official] += 1
        if script.task == "FSA":
            fsa.append(script.answer)
        for letter, text in zip("ABCDEF", _texts(script), strict=False):
            bucket = hits if letter in official and script.task != "CCQA" else misses
            bucket.setdefault(script.task, Counter()).update(_words(text))
    for task in set(hits) | set(misses):
        good, bad = hits.get(task, Counter()), misses.get(task, Counter())
        n_good, n_bad, vocab = sum(good.values()), sum(bad.values()), len(set(good) | set(bad)) + 1
        prior.word_odds[task] = {
            w: math.log((good[w] + 1) / (n_good + vocab)) - math.log((bad[w] + 1) / (n_bad + vocab))
            for w in set(good) | set(bad)
        }
    if fsa:
        prior.intervals["FSA"] = (median(float(a[0]) for a in fsa), median(float(a[1]) for a in fsa))
    return prior


def _shape(script: Script) -> tuple:
    return script.task, len(script.options), len(script.videos)


def _pick(script: Script, key: Callable[[int, str], float]) -> str | None:
    texts = _texts(script)
    if not texts:
        return None
    best = max(range(len(texts)), key=lambda i: (key(i, texts[i]), -i))
    return "ABCDEF"[best]


def _prior(script: Script, prior: Prior) -> str | None:
    if script.task == "FSA" and "FSA" in prior.intervals:
        return "{:g},{:g}".format(*prior.intervals["FSA"])
    seen = prior.answers.get(_shape(script))
    return seen.most_common(1)[0][0] if seen else None


def _overlap(script: Script) -> str | None:
    question = _words(script.question)
    return _pick(script, lambda _, text: len(_words(text) & question))


def _odd_one_out(script: Script, sign: int) -> str | None:
    texts = [_words(t) for t in _texts(script)]
    return _pick(script, lambda i, _: sign * sum(len(texts[i] & t) for j, t in enumerate(texts) if j != i))


def _word_prior(script: Script, prior: Prior) -> str | None:
    odds = prior.word_odds.get(script.task, {})
    return _pick(script, lambda _, text: sum(odds.get(w, 0.0) for w in _words(text)))


def _reference_segment(script: Script, scaled: bool) -> str | None:
    if script.task != "FSA":
        return None
    start, end = (float(x) for x in script.reference["ref_segment"])
    ratio = script.videos[1].duration / script.videos[0].duration if scaled else 1.0
    return f"{start * ratio:.1f},{end * ratio:.1f}"


Baseline = Callable[[Script, Prior], str | None]  # None: does not apply to this task
QUESTION_ONLY: dict[str, Baseline] = {
    "prior": _prior,
    "first option": lambda s, p: "A" if s.options else None,
    "longest": lambda s, p: _pick(s, lambda _, t: len(t)),
    "shortest": lambda s, p: _pick(s, lambda _, t: -len(t)),
    "overlap": lambda s, p: _overlap(s),
    "odd one out": lambda s, p: _odd_one_out(s, -1),
    "centroid": lambda s, p: _odd_one_out(s, 1),
    "word prior": _word_prior,
    "identity order": lambda s, p: "->".join(str(i) for i in range(1, len(s.videos) + 1)) if s.task == "PSS" else None,
    "copy reference": lambda s, p: _reference_segment(s, scaled=False),
    "scaled reference": lambda s, p: _reference_segment(s, scaled=True),
    "echo question": lambda s, p: s.question if s.task == "CCQA" else None,
}


def question_only(train: Sequence[Script], test: Sequence[Script]) -> dict[str, float | None]:
    """Mean official score of each question-only baseline on `test` (None where it does not apply)."""
    prior = fit_prior(train)
    results: dict[str, float | None] = {}
    for name, baseline in QUESTION_ONLY.items():
        outputs = [(script, baseline(script, prior)) for script in test]
        scored = [score(script, output) for script, output in outputs if output is not None]
        results[name] = mean(scored) if scored else None
    return results


# ---------------------------------------------------------------------------------------------- answerability
@dataclass
class Answerability:
    """How a policy did on scripts through the real agent loop."""

    scores: dict[str, float]
    results: dict[str, EpisodeResult]

    @property
    def mean(self) -> float:
        return mean(self.scores.values()) if self.scores else 0.0

    @property
    def failures(self) -> list[str]:
        return [i for i, s in self.scores.items() if s < 1.0]

    @property
    def mean_tool_calls(self) -> float:
        return mean(r.tool_calls for r in self.results.values()) if self.results else 0.0


def answerable(
    scripts: Sequence[Script],
    policy: Policy | None = None,
    limits: Limits | None = None,
    simulator: ScriptSimulator | None = None,
    progress: bool = False,
) -> Answerability:
    """Run a policy (the expert by default) through `Agent` + `ScriptSimulator` on every script and score it (with
    `progress`, under a progress bar; off by default, as callers such as benchmarks/generator_quality.py show their
    own status line)."""
    by_id = {s.id: s for s in scripts}
    agent = Agent(policy or ExpertPolicy(by_id), simulator or ScriptSimulator(by_id), limits)
    runs = map_with_progress(
        lambda script: agent.run(script.episode),
        scripts,
        describe=lambda done: f"answered {sum(r.answer is not None for r in done)}/{len(done)}",
        label="answerability",
        progress=progress,
    )
    results = {s.id: result for s, result in zip(scripts, runs, strict=True)}
    return Answerability({s.id: score(s, results[s.id].answer) for s in scripts}, results)


def missing_evidence(script: Script, simulator: ScriptSimulator | None = None) -> list[str]:
    """Evidence facts that do not appear in the simulator's answer for their interval (empty when all do)."""
    simulator = simulator or ScriptSimulator({script.id: script})
    episode = script.episode
    missing = []
    for item in script.evidence:
        if item.tool == "observe":
            text = simulator.observe(
                episode, Observe(video=item.video, start=item.start, end=item.end, focus=item.focus)
            )
        else:
            text = simulator.listen(episode, Listen(video=item.video, start=item.start, end=item.end))
        if item.fact not in text:
            missing.append(f"{script.id}: video {item.video} [{item.start:g}-{item.end:g}] {item.tool}: {item.fact!r}")
    return missing


def main(argv: list[str] | None = None) -> None:
    from scripts_gen.generate import generate

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300, help="test scripts per task (as many again to fit priors)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for task in TASK_ORDER:
        train, test = generate(task, args.n, args.seed + 1), generate(task, args.n, args.seed)
        baselines = question_only(train, test)
        best = max((v, k) for k, v in baselines.items() if v is not None)
        chance = mean(uniform_chance(s) for s in test)
        expert = answerable(test, progress=True)
        print(
            f"{task:5} expert {expert.mean:.3f}  uniform chance {chance:.3f}  "
            f"best question-only: {best[1]} {best[0]:.3f}"
        )


if __name__ == "__main__":
    main()
