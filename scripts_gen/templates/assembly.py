"""PEA (procedural error analysis): three clips of people taking apart and building the same toy vehicle.

Each clip is a stretch [begin, end] of a longer recording, presented as its own video (times relative to the clip,
`offset` = begin). Actions are "attach/detach the X and the Y"; a few are done wrongly (the part does not fit and is
redone) or are unnecessary (a correctly fitted part is taken off and put straight back). The question asks which
action or which video holds a given kind of mistake; only watching the actions decides it.
"""

from __future__ import annotations

import random

from agentcvr.script import Script, VideoScript
from scripts_gen.templates.layout import Beat, evidence, lay_out, place_correct

# fmt: off
# toy -> parts that join (each pair gives an attach and a detach action), and the toy's code in file names
TOYS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "transporter": ("c08c", [("transport cabin", "base"), ("rear roof", "transport cabin"),
                             ("door", "transport cabin"), ("bumper", "cabin"), ("strap", "cabin"),
                             ("cabin", "chassis"), ("base", "chassis"), ("wheel", "chassis")]),
    "excavator": ("a01b", [("arm", "boom"), ("bucket", "arm"), ("boom", "cabin"), ("cabin", "base"),
                           ("track", "base"), ("roof", "cabin"), ("counterweight", "base")]),
    "fire truck": ("c13d", [("ladder", "turntable"), ("turntable", "body"), ("water tank", "body"),
                            ("light bar", "cabin"), ("cabin", "chassis"), ("body", "chassis"),
                            ("bumper", "chassis"), ("wheel", "chassis")]),
    "dump truck": ("b07e", [("dump bed", "chassis"), ("hinge", "dump bed"), ("cabin", "chassis"),
                            ("bumper", "cabin"), ("interior", "cabin"), ("roof", "cabin"), ("wheel", "chassis"),
                            ("sound module", "chassis")]),
}
Action = tuple[str, str, str]  # (verb, part, other part)

DONE = {
    ("attach", "ok"): "The person attaches the {a} to the {b}; it clicks firmly into place.",
    ("detach", "ok"): "The person detaches the {a} from the {b} and sets it aside.",
    ("attach", "wrong"): ("The person tries to attach the {a} to the {b} the wrong way round; it does not fit, so "
                          "they pull it off and try again."),
    ("detach", "wrong"): ("The person yanks at the {a} without releasing the clip on the {b}, bends it, and has to "
                          "start the detach over."),
    ("attach", "extra"): ("The person attaches the {a} to the {b} although it had already been attached a moment "
                          "ago, then removes the duplicate part."),
    ("detach", "extra"): ("The person detaches the {a} from the {b} even though it was correctly fitted, then puts "
                          "it straight back."),
}
IDLE = ["The person looks at the instruction sheet.", "The person turns the {toy} over to look underneath.",
        "The person picks up a small screwdriver.", "The person sorts loose parts on the table.",
        "The person pauses and rubs their eyes.", "The person holds the partly built {toy} up to the light.",
        "The person reaches for a part at the edge of the table."]
EXACTLY_TWO = ["Which action is incorrectly performed in exactly two videos?",
               "Which action goes wrong in exactly two of the three videos?"]
UNNECESSARY = ["Which video contains an unnecessary step classified as 'shouldn't have happened'?",
               "Which assembly error is caused by an unnecessary action that shouldn't have been performed?"]
WRONG_IN = ["Which action is performed incorrectly in Video {k}?", "In Video {k}, which action is done wrongly?"]
# fmt: on


def _name(action: Action) -> str:
    verb, a, b = action
    return f"{verb} the {a} and the {b}"


def _clip(rng: random.Random, index: int, toy: str, plan: list[tuple[Action, str]]) -> tuple[VideoScript, dict]:
    """A clip doing the (action, outcome) pairs in order; returns it and the events by action name."""
    code, _ = TOYS[toy]
    beats = [
        Beat(
            DONE[(verb, outcome)].format(a=a, b=b),
            rng.uniform(5, 16) * (1.6 if outcome != "ok" else 1.0),
            key=_name((verb, a, b)),
        )
        for (verb, a, b), outcome in plan
    ]

    def filler(r: random.Random) -> tuple[str, None]:
        return r.choice(IDLE).format(toy=toy), None

    active = sum(b.length for b in beats)
    length = round(active * rng.uniform(1.2, 1.8))
    events, keyed = lay_out(rng, beats, length, filler, piece=(3, 10), empty=0.25)
    total = round(length + rng.uniform(60, 500), 3)
    begin = rng.randint(0, int(total - length))
    uid = rng.randint(9000, 9099)
    name = (
        f"assembly/nusar-2021_action_both_{uid}-{code}_{uid}_user_id_2021-0{rng.randint(1, 3)}-"
        f"{rng.randint(10, 28)}_{rng.randint(90000, 175959)}_C10118_rgb.mp4"
    )
    video = VideoScript(index=index, duration=float(length), name=name, source=name, offset=float(begin), events=events)
    return video, {"total": total, "begin": begin, **keyed}


def procedural_error_analysis(rng: random.Random, script_id: str) -> Script:
    toy = rng.choice(sorted(TOYS))
    actions = [(verb, a, b) for a, b in TOYS[toy][1] for verb in ("attach", "detach")]
    kind = rng.choice(["exactly_two", "unnecessary", "wrong_in"])
    picked = rng.sample(actions, 4)  # the four option actions
    outcomes: list[dict[Action, str]] = [{a: "ok" for a in picked} for _ in range(3)]
    key_video = rng.randint(1, 3)
    if kind == "exactly_two":
        counts = [2] + [rng.choice([0, 1, 1, 3]) for _ in range(3)]
        for action, count in zip(picked, counts, strict=True):
            for video in rng.sample(range(3), count):
                outcomes[video][action] = "wrong"
        options, answer = place_correct(rng, _name(picked[0]), [_name(a) for a in picked[1:]])
        question = rng.choice(EXACTLY_TWO)
        deciding = [(v, picked[0]) for v in range(3) if outcomes[v][picked[0]] == "wrong"]
    elif kind == "unnecessary":
        videos = [rng.randrange(3) for _ in picked]
        outcomes[videos[0]][picked[0]] = "extra"
        texts = [f"Video {v + 1}: {_name(a)[0].upper()}{_name(a)[1:]}" for v, a in zip(videos, picked, strict=True)]
        options, answer = place_correct(rng, texts[0], texts[1:])
        question = rng.choice(UNNECESSARY)
        deciding = [(videos[0], picked[0])]
    else:
        outcomes[key_video - 1][picked[0]] = "wrong"
        options, answer = place_correct(rng, _name(picked[0]), [_name(a) for a in picked[1:]])
        question = rng.choice(WRONG_IN).format(k=key_video)
        deciding = [(key_video - 1, picked[0])]
    clips, keyed = [], []
    for video in range(3):
        others = rng.sample([a for a in actions if a not in picked], rng.randint(6, min(12, len(actions) - 4)))
        plan = [(a, outcomes[video][a]) for a in picked] + [
            (a, "wrong" if rng.random() < 0.08 else "ok") for a in others
        ]
        rng.shuffle(plan)
        clip, events = _clip(rng, video + 1, toy, plan)
        clips.append(clip)
        keyed.append(events)
    evidences = [evidence(v + 1, keyed[v][_name(a)], f"how the person does: {_name(a)}") for v, a in deciding]
    return Script(
        id=script_id,
        task="PEA",
        question=question,
        options=options,
        answer=answer,
        videos=clips,
        evidence=evidences,
        reference={
            "toy": toy,
            "kind": kind,
            "begin": [k["begin"] for k in keyed],
            "end": [k["begin"] + c.duration for k, c in zip(keyed, clips, strict=True)],
            "duration": [k["total"] for k in keyed],
        },
    )
