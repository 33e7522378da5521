"""The temporal tasks on cooking videos: FSA (align a step across two videos) and PSS (order shuffled step clips).

FSA: video 1 has a reference segment (given in the prompt's context); the answer is the interval of video 2 where
the same step happens, usually done with a different method, so matching needs the step's function, not its words.
PSS: 3-6 consecutive steps of one video, each presented as its own clip (times relative to the clip, `offset` the
clip start in the source), numbered in a random order; the answer lists the clip numbers in time order. Every step's
frames show what it starts from (the previous step's product), which is what makes the order visible.
"""

from __future__ import annotations

import random

from agentcvr.script import Evidence, Script, VideoScript
from scripts_gen.templates.cooking import cook_video, random_plan
from scripts_gen.templates.layout import cut, evidence, seconds
from scripts_gen.templates.recipes import RECIPES

FSA_QUESTION = (
    "Video 1 and video 2 show two cooks making the same dish. Find the segment of video 2 that serves "
    "the same function as the reference segment of video 1."
)
PSS_QUESTION = (
    "The videos are clips of one cooking video, numbered out of order. In what order do they happen in "
    "the original video?"
)


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def functional_step_alignment(rng: random.Random, script_id: str) -> Script:
    dish = rng.choice(sorted(RECIPES))
    steps = RECIPES[dish]
    step = rng.randrange(len(steps))
    methods = steps[step][2]
    plan_a, plan_b = random_plan(rng, dish), random_plan(rng, dish)
    plan_a[step] = rng.randrange(len(methods))
    same = rng.random() < 0.25  # most of the time the second cook does the step differently
    plan_b[step] = plan_a[step] if same else rng.choice([i for i in range(len(methods)) if i != plan_a[step]])
    video_a, keyed_a = cook_video(rng, 1, dish, plan_a, asides=True)
    video_b, keyed_b = cook_video(rng, 2, dish, plan_b, asides=True)
    ref, target = keyed_a[str(step)], keyed_b[str(step)]
    function = steps[step][0]
    return Script(
        id=script_id,
        task="FSA",
        question=FSA_QUESTION,
        answer=[_number(target.start), _number(target.end)],
        videos=[video_a, video_b],
        context={"Reference segment in video 1": f"{seconds(ref.start)}-{seconds(ref.end)} s"},
        evidence=[evidence(1, ref, "what the cook is doing"), evidence(2, target, function)],
        reference={
            "ref_segment": [_number(ref.start), _number(ref.end)],
            "dish": dish,
            "step": function,
            "video A": video_a.name,
            "video B": video_b.name,
        },
    )


def procedural_step_sequencing(rng: random.Random, script_id: str) -> Script:
    dish = rng.choice(sorted(RECIPES))
    steps = RECIPES[dish]
    count = rng.randint(3, min(6, len(steps)))
    first = rng.randint(0, len(steps) - count)
    run = list(range(first, first + count))
    plan = [rng.randrange(len(methods)) for _, _, methods in steps]  # nothing skipped: the run is contiguous
    split = frozenset(s for s in run if rng.random() < 0.3)
    source, keyed = cook_video(rng, 1, dish, plan, split=split)
    numbers = list(range(1, count + 1))
    rng.shuffle(numbers)  # numbers[i] = clip number of the i-th step in time
    clips: dict[int, VideoScript] = {}
    evidences: dict[int, Evidence] = {}
    segments: dict[str, list[list[float | int]]] = {}
    for position, step in enumerate(run):
        main, tail = keyed[str(step)], keyed.get(f"{step}b")
        begin, end = main.start, (tail or main).end
        number = numbers[position]
        parts = [main] + ([tail] if tail else [])
        segments[str(number)] = [[_number(p.start), _number(p.end)] for p in parts]
        clips[number] = VideoScript(
            index=number,
            duration=round(end - begin, 3),
            name=source.name,
            source=source.name,
            offset=begin,
            events=cut(source.events, begin, end),
        )
        shifted = main.model_copy(update={"start": 0.0, "end": round(main.end - begin, 3)})
        evidences[number] = evidence(number, shifted, steps[step][0])
    return Script(
        id=script_id,
        task="PSS",
        question=PSS_QUESTION,
        answer="->".join(str(n) for n in numbers),
        videos=[clips[n] for n in sorted(clips)],
        evidence=[evidences[n] for n in sorted(evidences)],
        reference={
            "segments": dict(sorted(segments.items())),
            "video": source.name,
            "duration": source.duration,
            "dish": dish,
        },
    )
