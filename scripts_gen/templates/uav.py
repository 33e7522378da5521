"""MSR (multi-view spatial reasoning) and MOC (multi-view object counting) on two drone views of one road.

A scene is a two-view timeline sampled every 2 s (the published UAV script format): five tracked objects obj_1..obj_5
cross each view during a window of moments, the traffic moving bottom-to-top in view A and left-to-right in view B;
where an object is in the frame follows from how far through its window it is and which lane it drives in. MSR asks
where an object is in one view at the moment something happens in the other, or which lane it ends in; MOC counts
events (overtakes, passes) that may show in either view or both, so they must be matched across views, not added.
The answer is drawn first (uniformly over the option pool) and the tracks are built to produce it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from agentcvr.script import Evidence, Script, UAVMoment, uav_views
from scripts_gen.templates.layout import LETTERS, lettered, place_correct

# fmt: off
STEP = 2.0
LANES = ["the leftmost lane", "the second lane from the left", "the second lane from the right", "the rightmost lane"]
SIDEWALKS = {-1: "the left sidewalk", 4: "the right sidewalk"}
REGIONS = {  # view -> (rows by progress or lane side, columns by lane side or progress)
    "A": ["bottom left", "bottom right", "center left", "center right", "top left", "top right"],
    "B": ["top left", "top center", "top right", "bottom left", "bottom center", "bottom right"],
}
NOT_SHOWN = "not shown in the view"
EDGE = {"A": "top", "B": "right"}
COLORS = ["white", "black", "red", "silver", "blue", "grey", "green", "yellow"]
KINDS = [("car", "car"), ("car", "car"), ("car", "car"), ("truck", "truck"), ("bus", "bus"), ("person", "person"),
         ("bicycle", "bicycle")]
BACKGROUND = ["Two pedestrians wait at the crossing.", "A delivery van is parked by the roadside.",
              "The traffic light at the junction turns red.", "Shadows of trees fall across the road.",
              "A pedestrian crosses at the zebra crossing.", "Traffic moves slowly in both directions.",
              "A bus pulls into the bus stop."]
FEATURES = ["with a roof box", "with tinted windows", "with a dented door", "with a taxi sign", "towing a trailer",
            "with a bike rack", "with an open sunroof", "with a missing hubcap"]
SPOTS = ["next to a bakery", "under a tree", "by a fire hydrant", "outside a pharmacy", "beside a bus stop",
         "in front of a school", "near a phone booth", "by a bike rack"]
# fmt: on


# Where a deciding fact is: (view, moment, focus, fact); fact None = the whole description of that moment.
Clue = tuple[str, int, str, str | None]


@dataclass
class Track:
    """One tracked object: a window of moments per view (virtual: may run past the ends) and a lane schedule."""

    number: int
    label: str
    desc: str
    windows: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    lanes: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # view -> [(from moment, lane)]

    @property
    def ref(self) -> str:
        return f"obj_{self.number} ({self.desc})"

    def lane(self, view: str, moment: int) -> int:
        return [lane for start, lane in self.lanes[view] if start <= moment][-1]

    def visible(self, view: str, moment: int) -> bool:
        window = self.windows.get(view)
        return window is not None and window[0] <= moment < window[1]

    def region(self, view: str, moment: int) -> str:
        start, end = self.windows[view]  # type: ignore[misc]
        third = min(2, 3 * (moment - start) // (end - start))
        side = 0 if self.lane(view, moment) <= 1 else 1
        return REGIONS[view][third * 2 + side] if view == "A" else REGIONS[view][side * 3 + third]

    def sentence(self, view: str, moment: int) -> str | None:
        window = self.windows.get(view)
        if window is not None and moment == window[1]:
            return f"{self.ref} completely leaves the view at the {EDGE[view]} edge."
        if not self.visible(view, moment):
            return None
        lane = self.lane(view, moment)
        where = f"on {SIDEWALKS[lane]}" if lane in SIDEWALKS else f"in {LANES[lane]}"
        changes = [(s, x) for s, x in self.lanes[view] if s == moment and s > window[0]]  # type: ignore[index]
        if changes:
            before = self.lane(view, moment - 1)
            where = f"moving from {LANES[before]} into {LANES[lane]}"
        return f"{self.ref} is at the {self.region(view, moment)} of the frame, {where}."


class Scene:
    def __init__(self, rng: random.Random, moments: int):
        self.rng, self.moments = rng, moments
        self.extra: dict[tuple[str, int], list[str]] = {}
        self.tracks = [self._random_track(n) for n in range(1, 6)]

    def _random_track(self, number: int) -> Track:
        label, kind = self.rng.choice(KINDS)
        color = self.rng.choice(COLORS)
        desc = f"person in a {color} coat" if kind == "person" else f"{color} {kind}"
        track = Track(number, label, desc)
        for view in "AB":
            self.place(track, view, None)
        return track

    def lane_for(self, track: Track, side: int | None = None) -> int:
        if track.label == "person":
            return (-1, 4)[self.rng.randrange(2) if side is None else side]
        return self.rng.randrange(4) if side is None else self.rng.choice([(0, 1), (2, 3)][side])

    def place(self, track: Track, view: str, window: tuple[int, int] | None, lane: int | None = None) -> None:
        """Give a track a window in a view (random when None; 20% chance of never showing) and a steady lane."""
        if window is None:
            length = self.rng.randint(6, 20)
            start = self.rng.randint(-length // 2, self.moments - 3)
            window = (start, start + length) if self.rng.random() > 0.2 else None
        track.windows[view] = window
        track.lanes[view] = [(-(10**6), self.lane_for(track) if lane is None else lane)]
        if window and track.label != "person" and lane is None and self.rng.random() < 0.25:
            change = self.rng.randint(window[0] + 1, window[1] - 1)  # a lane change somewhere in the window
            track.lanes[view].append((change, self.rng.choice([x for x in range(4) if x != track.lanes[view][0][1]])))

    def put_at(self, track: Track, view: str, moment: int, region: str) -> None:
        """Place a track so that it is in `region` of `view` at `moment` (or absent then, for NOT_SHOWN)."""
        length = self.rng.randint(6, 15)
        if region == NOT_SHOWN:
            start = (
                moment + 1 + self.rng.randint(0, 8)
                if self.rng.random() < 0.5
                else moment - length - self.rng.randint(1, 6)
            )
            self.place(track, view, (start, start + length))
            return
        index = REGIONS[view].index(region)
        third, side = (index // 2, index % 2) if view == "A" else (index % 3, index // 3)
        low, high = -(-third * length // 3), -(-(third + 1) * length // 3) - 1
        start = moment - self.rng.randint(low, high)
        self.place(track, view, (start, start + length), lane=self.lane_for(track, side))

    def say(self, view: str, moment: int, text: str) -> None:
        self.extra.setdefault((view, moment), []).append(text)

    def text(self, view: str, moment: int) -> str:
        parts = [s for t in self.tracks if (s := t.sentence(view, moment))] + self.extra.get((view, moment), [])
        return " ".join(parts) or "The road is clear."

    def build(
        self, script_id: str, task: str, question: str, options: list[str], answer: str, evidence: list[Clue]
    ) -> Script:
        for view in "AB":
            for moment in range(self.moments):
                if self.rng.random() < 0.25:
                    self.say(view, moment, self.rng.choice(BACKGROUND))
        moments = [
            UAVMoment(timestamp=i * STEP, view_a=self.text("A", i), view_b=self.text("B", i))
            for i in range(self.moments)
        ]
        videos = uav_views(moments, self.moments * STEP, STEP)
        vid = self.rng.randint(1, 60)
        for video in videos:
            video.name = f"uav/frames/{video.index}/{vid}-{video.index}"
        evidences = [
            Evidence(
                video=1 if view == "A" else 2,
                start=m * STEP,
                end=(m + 1) * STEP,
                focus=focus,
                fact=fact or self.text(view, m),
            )
            for view, m, focus, fact in evidence
        ]
        hints = {}
        for track in self.tracks:
            seen = [(m, v) for m in range(self.moments) for v in "AB" if track.visible(v, m)]
            hints[f"obj_{track.number}"] = (
                f"{track.label}, first seen in view {seen[0][1]} at {seen[0][0] * STEP:g} s" if seen else track.label
            )
        return Script(
            id=script_id,
            task=task,
            question=question,
            options=options,
            answer=answer,
            videos=videos,
            evidence=evidences,
            context=hints,
            reference={"objects": [{"id": t.number, "label": t.label} for t in self.tracks], "vid": vid},
        )


def spatial_reasoning(rng: random.Random, script_id: str) -> Script:
    scene = Scene(rng, rng.randint(30, 60))
    kind = rng.choice(["exit", "parallel", "lane"])
    order = rng.sample(scene.tracks, 5)
    if kind == "lane":
        track = next((t for t in order if t.label != "person"), order[0])
        if track.label == "person":  # lanes are for vehicles
            track.label, track.desc = "car", f"{rng.choice(COLORS)} car"
            scene.place(track, "A", None)
            scene.place(track, "B", None)
        view = rng.choice("AB")
        target = rng.randrange(4)
        length = rng.randint(10, 20)
        start = rng.randint(0, scene.moments - length - 1)
        scene.place(track, view, (start, start + length), lane=rng.choice([x for x in range(4) if x != target]))
        change = rng.randint(start + 2, start + length - 3)
        track.lanes[view].append((change, target))
        options, answer = place_correct(rng, f"In {LANES[target]}", [f"In {LANES[x]}" for x in range(4) if x != target])
        question = f"What is the final driving trajectory of obj_{track.number} in view {view}?"
        last = start + length - 1
        evidence: list[Clue] = [
            (
                view,
                change,
                f"lane changes of obj_{track.number}",
                f"{track.ref} is at the {track.region(view, change)} of the frame, moving from",
            ),
            (view, last, f"lane of obj_{track.number}", track.sentence(view, last)),
        ]
        return scene.build(script_id, "MSR", question, options, answer, evidence)
    trigger_view = rng.choice("AB")
    view = "B" if trigger_view == "A" else "A"
    moment = rng.randint(scene.moments // 3, scene.moments - 3)
    target = order[0]
    if kind == "exit":
        mover = order[1]
        length = rng.randint(5, 14)
        scene.place(mover, trigger_view, (moment - length, moment))
        trigger = f"When obj_{mover.number} completely leaves view {trigger_view}"
        fact = f"{mover.ref} completely leaves the view"
    else:
        first, second = order[1], order[2]
        for track in (first, second):
            length = rng.randint(8, 16)
            start = moment - rng.randint(1, length - 2)
            scene.place(track, trigger_view, (start, start + length))
        fact = f"obj_{first.number} and obj_{second.number} are side by side."
        scene.say(trigger_view, moment, fact)
        trigger = f"When obj_{first.number} and obj_{second.number} are side by side in view {trigger_view}"
    region = rng.choice([*REGIONS[view], NOT_SHOWN])
    scene.put_at(target, view, moment, region)
    pool = [r for r in [*REGIONS[view], NOT_SHOWN] if r != region]
    texts = {r: NOT_SHOWN.capitalize() if r == NOT_SHOWN else f"{r.capitalize()} of the frame" for r in [region, *pool]}
    options, answer = place_correct(rng, texts[region], [texts[r] for r in rng.sample(pool, 3)])
    question = f"{trigger}, where is obj_{target.number} in view {view}?"
    evidence: list[Clue] = [
        (trigger_view, moment, trigger.removeprefix("When "), fact),
        (view, moment, f"where obj_{target.number} is", None),
    ]
    return scene.build(script_id, "MSR", question, options, answer, evidence)


def object_counting(rng: random.Random, script_id: str) -> Script:
    scene = Scene(rng, rng.randint(30, 60))
    track, other = rng.sample(scene.tracks, 2)
    for view in "AB":  # the counted object crosses most of both views
        start = rng.randint(-5, scene.moments // 4)
        scene.place(track, view, (start, start + rng.randint(scene.moments * 2 // 3, scene.moments)))
    low, position = rng.randint(0, 4), rng.randrange(4)
    count = low + position
    kind = rng.choice(["cyclists", "sedans", "parked"])
    color = rng.choice(COLORS[:6])
    n, o = track.number, other.number
    if kind == "cyclists":
        question = rng.choice([f"How many cyclists overtake obj_{n} in total?", f"How many cyclists pass obj_{n}?"])
        jackets = rng.sample(COLORS, 8)
        counted = [f"A cyclist in a {c} jacket overtakes obj_{n}." for c in jackets[:count]]
        decoys = [
            f"A cyclist in a {jackets[-1]} jacket rides behind obj_{n}.",
            f"A motorcyclist overtakes obj_{n}.",
            f"A cyclist in a {jackets[-2]} jacket overtakes obj_{o}.",
        ]
    elif kind == "sedans":
        question = f"How many {color} sedans overtake obj_{n}?"
        features = rng.sample(FEATURES, 8)
        counted = [f"A {color} sedan {f} overtakes obj_{n}." for f in features[:count]]
        others = [c for c in COLORS if c != color]
        decoys = [
            f"A {rng.choice(others)} sedan {features[-1]} overtakes obj_{n}.",
            f"A {color} sedan {features[-2]} overtakes obj_{o}.",
            f"A {color} SUV overtakes obj_{n}.",
        ]
    else:
        question = f"How many {color} cars parked by the roadside does obj_{n} pass in total?"
        spots = rng.sample(SPOTS, 8)
        counted = [f"obj_{n} passes a {color} car parked by the roadside {s}." for s in spots[:count]]
        others = [c for c in COLORS if c != color]
        decoys = [
            f"obj_{n} passes a {rng.choice(others)} car parked by the roadside {spots[-1]}.",
            f"obj_{o} passes a {color} car parked by the roadside {spots[-2]}.",
        ]
    evidence: list[Clue] = []
    for text in counted:
        views = rng.choice(["A", "B", "AB"])
        for view in views:
            start, end = track.windows[view]  # type: ignore[misc]
            moment = rng.randint(max(0, start), min(end, scene.moments) - 1)
            scene.say(view, moment, text)
            if view == views[0]:
                evidence.append((view, moment, f"{kind} and obj_{n}", text))
    for text in rng.sample(decoys, rng.randint(1, len(decoys))):
        scene.say(rng.choice("AB"), rng.randrange(scene.moments), text)
    if not counted:  # nothing to count: the evidence is obj_n being there, seen over its window
        start = max(0, track.windows["A"][0])  # type: ignore[index]
        evidence.append(("A", start, f"obj_{n}", track.ref))
    options = lettered([str(low + i) for i in range(4)])  # consecutive counts, the true one at a uniform position
    return scene.build(script_id, "MOC", question, options, LETTERS[position], evidence)
