"""Cooking videos from recipe plans, and the two comparison tasks on them: CC (4 videos, options) and CCQA (2 videos,
free-form with scoring points).

A plan picks one method per recipe step (or skips an optional step); the video shows the steps in order among
kitchen chatter and idle moments, minutes long. Questions compare how the videos carry out one step, so the
deciding facts are the step events of every video involved.
"""

from __future__ import annotations

import random
import string

from agentcvr.script import Event, Evidence, Script, VideoScript
from scripts_gen.templates.layout import Beat, evidence, lay_out, lettered, place_correct
from scripts_gen.templates.recipes import ASIDES, KITCHEN, RECIPES

Plan = list[int | None]  # method index per recipe step, None = skipped
PAIRS = [(1, 2), (2, 3), (3, 4), (1, 4)]
CC_ONE = ["Which video shows {how}?", "Which video features {how}?"]
CC_TWO = ["Which two videos show {how}?", "Which two videos include {how}?"]
CC_SKIP = ["Which video does not include {function}?", "Which video skips {function}?"]
CC_DISTINCT = [
    "What distinguishes how Video {k} goes about {function} from the other videos?",
    "How does Video {k} differ from the others when it comes to {function}?",
]
CCQA_QUESTIONS = [
    "How do the chefs in video A and video B differ in the way they make {dish}?",
    "What differences are there between the methods used in video A and video B to prepare {dish}?",
    "Compare how the two chefs prepare {dish}: what do they do differently?",
]


def random_plan(rng: random.Random, dish: str, skip: float = 0.25) -> Plan:
    return [
        None if optional and rng.random() < skip else rng.randrange(len(methods))
        for _, optional, methods in RECIPES[dish]
    ]


def cook_video(
    rng: random.Random,
    index: int,
    dish: str,
    plan: Plan,
    label: str = "",
    split: frozenset[int] = frozenset(),
    asides: bool = False,
) -> tuple[VideoScript, dict[str, Event]]:
    """A cooking video following `plan`; returns it and the step events keyed by step index ("2").

    A step in `split` is interrupted: its event "2" is followed by chatter and then "2b", the chef going back to it.
    With `asides`, vlog scenes of random length come before and after the cooking, so that where a step falls in
    the video says little about where it falls in another one.
    """
    beats = [
        Beat(
            "The chef stands at a kitchen counter and greets the camera.",
            rng.uniform(4, 15),
            f"Hi everyone, today we're making {dish}.",
        )
    ]
    first = True
    for step, choice in enumerate(plan):
        if choice is None:
            continue
        function, _, methods = RECIPES[dish][step]
        speech = f"{'First' if first else 'Next'}, {function}." if rng.random() < 0.7 else None
        if step in split:
            beats.append(Beat(methods[choice][2], rng.uniform(8, 35), speech, key=str(step)))
            visual, chat = rng.choice(KITCHEN)
            beats.append(Beat(visual, rng.uniform(3, 10), chat, gap=0.05))
            beats.append(Beat(f"The chef goes back to {function}.", rng.uniform(5, 25), key=f"{step}b", gap=0.05))
        else:
            beats.append(Beat(methods[choice][2], rng.uniform(10, 60), speech, key=str(step)))
        first = False
    beats.append(
        Beat(
            f"The chef tastes the {dish} and smiles at the camera.",
            rng.uniform(4, 12),
            "Thanks for watching, see you next time!",
        )
    )
    active = sum(b.length for b in beats)
    stretch = rng.uniform(1.2, 2.2) if asides else rng.uniform(1.4, 2.8)  # asides add their own minutes
    duration = round(min(max(active * stretch, 120.0), 620.0), 3)

    def filler(r: random.Random) -> tuple[str, str | None]:
        return r.choice(KITCHEN)

    events, keyed = lay_out(rng, beats, duration, filler, piece=(4, 16), empty=0.2)
    if asides:
        before, after = round(duration * rng.uniform(0, 1.0)), round(duration * rng.uniform(0, 0.6))
        events = (
            _asides(rng, before)
            + [_shift(e, before) for e in events]
            + [_shift(e, before + duration) for e in _asides(rng, after)]
        )
        keyed = {k: _shift(e, before) for k, e in keyed.items()}
        duration = round(before + duration + after, 3)
    name = "cook/" + "".join(rng.choices(string.ascii_letters + string.digits + "-_", k=11)) + ".mp4"
    return VideoScript(index=index, duration=duration, name=name, label=label, events=events), keyed


def _asides(rng: random.Random, length: float) -> list[Event]:
    if length < 1:
        return []
    return lay_out(rng, [], length, lambda r: r.choice(ASIDES), piece=(8, 40), empty=0.1)[0]


def _shift(event: Event, seconds: float) -> Event:
    return event.model_copy(update={"start": round(event.start + seconds, 3), "end": round(event.end + seconds, 3)})


def _other(rng: random.Random, count: int, avoid: int) -> int:
    return rng.choice([i for i in range(count) if i != avoid])


def _step_evidence(videos: list[tuple[VideoScript, dict[str, Event]]], step: int, function: str) -> list[Evidence]:
    return [evidence(video.index, keyed[str(step)], function) for video, keyed in videos if str(step) in keyed]


def culinary_comparison(rng: random.Random, script_id: str) -> Script:
    dish = rng.choice(sorted(RECIPES))
    steps = RECIPES[dish]
    kind = rng.choice(["one", "two", "skip", "distinct"])
    step = rng.choice(
        [i for i, s in enumerate(steps) if s[1]]
        if kind == "skip"
        else [i for i, s in enumerate(steps) if len(s[2]) >= 4]
        if kind == "distinct"
        else range(len(steps))
    )
    function, _, methods = steps[step]
    plans = [random_plan(rng, dish) for _ in range(4)]
    target = rng.randrange(len(methods))
    how = methods[target][1]
    if kind in ("one", "skip"):
        chosen = rng.randint(1, 4)
        correct = [chosen]
        options, answer = lettered([f"Video {i}" for i in range(1, 5)]), "ABCD"[chosen - 1]
    elif kind == "two":
        pair = rng.randrange(4)
        correct = list(PAIRS[pair])
        style = rng.choice(["Videos {a} & {b}", "Videos {a} and {b}"])
        options, answer = lettered([style.format(a=a, b=b) for a, b in PAIRS]), "ABCD"[pair]
    else:
        correct = [rng.randint(1, 4)]
        hows = [m[1][0].upper() + m[1][1:] for m in methods]
        options, answer = place_correct(rng, hows[target], [h for i, h in enumerate(hows) if i != target])
    for number, plan in enumerate(plans, start=1):
        if kind == "skip":
            plan[step] = None if number in correct else rng.randrange(len(methods))
        else:
            plan[step] = target if number in correct else _other(rng, len(methods), target)
    videos = [cook_video(rng, i, dish, plan) for i, plan in enumerate(plans, start=1)]
    template = {"one": CC_ONE, "two": CC_TWO, "skip": CC_SKIP, "distinct": CC_DISTINCT}[kind]
    question = rng.choice(template).format(how=how, function=function, k=correct[0])
    return Script(
        id=script_id,
        task="CC",
        question=question,
        options=options,
        answer=answer,
        videos=[v for v, _ in videos],
        evidence=_step_evidence(videos, step, function),
        reference={"dish": dish, "kind": kind, "step": function},
    )


def comparative_culinary_qa(rng: random.Random, script_id: str) -> Script:
    dish = rng.choice(sorted(RECIPES))
    steps = RECIPES[dish]
    chosen = sorted(rng.sample(range(len(steps)), min(len(steps), rng.choice([3, 3, 4]))))
    plan_a = random_plan(rng, dish)
    plan_b = list(plan_a)
    for step in chosen:
        _, optional, methods = steps[step]
        if optional and rng.random() < 0.35:  # one of the two skips the step
            plan_a[step], plan_b[step] = (None, rng.randrange(len(methods)))[:: rng.choice([1, -1])]
        else:
            plan_a[step] = rng.randrange(len(methods))
            plan_b[step] = _other(rng, len(methods), plan_a[step])
    videos = [cook_video(rng, 1, dish, plan_a, "video A"), cook_video(rng, 2, dish, plan_b, "video B")]
    points, keywords, sentences, sides = [], [], [], []  # sides: which video each keyword belongs to
    for step in chosen:
        function, _, methods = steps[step]
        title = function[0].upper() + function[1:]
        a, b = plan_a[step], plan_b[step]
        if a is not None and b is not None:
            name_a, how_a = methods[a][:2]
            name_b, how_b = methods[b][:2]
            points.append(f"{title} ({name_a} vs {name_b})")
            keywords.append([name_a, name_b])
            sides.append({"video A": name_a, "video B": name_b})
            sentences.append(
                f"When it comes to {function}, video A shows the chef {how_a}, whereas video B shows the chef {how_b}."
            )
        else:
            present, absent = ("A", "B") if a is not None else ("B", "A")
            name, how = methods[a if a is not None else b][:2]  # type: ignore[index]
            points.append(f"{title} (only in video {present}: {name})")
            keywords.append([name])
            sides.append({f"video {present}": name, f"video {absent}": None})
            sentences.append(
                f"Only video {present} includes {function}, with the chef {how}; video {absent} skips this step."
            )
    evidences = [e for step in chosen for e in _step_evidence(videos, step, steps[step][0])]
    return Script(
        id=script_id,
        task="CCQA",
        question=rng.choice(CCQA_QUESTIONS).format(dish=dish),
        answer=" ".join(sentences),
        videos=[v for v, _ in videos],
        evidence=evidences,
        reference={"scoring_points": points, "point_keywords": keywords, "point_videos": sides, "dish": dish},
    )
