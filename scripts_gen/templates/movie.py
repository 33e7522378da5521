"""NC (narrative comprehension): four movies, "which video(s) feature ...?", and the movie vocabulary PI shares.

A movie is minutes of neutral scenes (dialogue, travel, scenery) with a few plot beats placed among them; NC asks
which movies contain a plot motif. A beat is sometimes only told in dialogue (its frames show two people talking),
so the agent has to listen as well as look.
"""

from __future__ import annotations

import itertools
import random

from agentcvr.script import Script, VideoScript
from scripts_gen.templates.layout import Beat, Filler, evidence, lay_out, lettered

# fmt: off
# Heroes and villains are men, allies women, so that the texts' pronouns agree.
MEN = ["Jack", "Dev", "Omar", "Tomas", "Rafael", "Victor", "Kofi", "Hugo", "Ivan", "Leo"]
WOMEN = ["Mara", "Lena", "Kate", "Ines", "Yuki", "Nadia", "Elena", "Greta", "Amara", "Sofia"]
PLACES = ["the harbor town", "the desert highway", "the jungle camp", "the mountain village", "the city center",
          "the old factory district", "the island resort", "the border crossing"]
ITEMS = ["diamond", "painting", "hard drive", "crown", "vaccine sample", "ancient idol"]
PREFIXES = ["BKL", "FAF", "PAW", "MCT", "QRS"]

NEUTRAL: list[tuple[str, str | None]] = [
    ("{hero} drives through {place} at dusk with the radio on.", None),
    ("{hero} and {ally} eat breakfast in a small kitchen.", "You barely slept again."),
    ("{hero} studies a map spread on a table.", "We go in at first light."),
    ("A wide shot of {place} under a grey sky.", None),
    ("{hero} walks down a crowded market street.", None),
    ("{ally} repairs a motorbike in a garage.", "Hand me the wrench, would you?"),
    ("{villain} watches the city from a tall office window.", "Everything is on schedule."),
    ("{hero} looks at an old photograph and sighs.", None),
    ("Rain streaks down a window as {hero} makes a phone call.", "I'll call you when it's done."),
    ("{hero} and {ally} argue in a parked car.", "You never listen to anyone."),
    ("Night falls over {place}; street lights flicker on.", None),
    ("{hero} trains alone in a gym, hitting a heavy bag.", None),
    ("{ally} laughs at a joke in a crowded bar.", "That's the worst joke I've ever heard."),
    ("{hero} reads a newspaper on a bench.", None),
    ("A crowd gathers in a town square for a festival.", None),
    ("{hero} packs a bag in a motel room.", "We leave tonight."),
    ("{villain} plays chess alone in a dark study.", None),
    ("{ally} feeds a stray cat on a doorstep.", "Here you go, little one."),
]
QUIET = "{hero} and {ally} talk in low voices in a dim room."

# NC motifs: key -> (noun phrase for questions, shown beats [(visual, speech)], a line that only tells it)
MOTIFS: dict[str, tuple[str, list[tuple[str, str | None]], str]] = {
    "invasion": ("a home invasion as a key plot point", [
        ("Masked men force open the back door of {hero}'s house at night while the family hides upstairs.",
         "Stay quiet, they're already inside the house."),
        ("Intruders smash a window and climb into {ally}'s living room, knocking over the lamps.",
         "Someone's in the house! Call the police!")],
        "Men broke into our house last night and tore the whole place apart."),
    "child": ("a character protecting a child", [
        ("{hero} shields a frightened little boy behind a car as shots ring out.", "Keep your head down."),
        ("{hero} hides a young girl in a closet and stands guard at the door.",
         "Nobody is going to hurt you, I promise.")],
        "I swore to keep that kid safe, whatever it costs me."),
    "reunion": ("a family reunion as the emotional resolution", [
        ("{hero} runs across an airport hall and embraces the sister he lost as a child.",
         "Twenty years... I thought I'd never see you again."),
        ("{ally} opens the door to find her father on the step, and they hug in tears.",
         "Dad, you came home!")],
        "After all these years my family is finally together again."),
    "object": ("a physical object that is key to resolving the conflict", [
        ("{hero} fits an old brass key from a locket into the vault door and it swings open, ending the standoff.",
         "Mother's key. It was the answer all along."),
        ("{hero} plays a tape recording to the police chief that exposes {villain}.",
         "Where did you get that tape?")],
        "That little recorder is the only thing that can bring him down."),
    "capture": ("a character being captured or nearly captured", [
        ("Soldiers throw a net over {ally} and drag her into a truck.", "Let me go!"),
        ("{villain}'s men corner {hero} in an alley and handcuff him to a pipe.",
         "Did you really think you could run from me?")],
        "They grabbed me on the bridge and locked me in a cellar for two days."),
    "creature": ("an attempt to bond with a huge creature", [
        ("{hero} slowly offers a hand to an enormous dragon, which lowers its head to sniff it.",
         "Easy... I'm not going to hurt you."),
        ("{ally} swims beside a giant whale and rests her palm on its side.", "She trusts us now.")],
        "The giant beast lets me near it now; we understand each other."),
    "betrayal": ("a betrayal by a trusted friend", [
        ("{ally} hands a folder of the team's plans to {villain} in an empty parking garage.",
         "Your friends will never suspect you."),
        ("{ally} empties the bullets from {hero}'s gun while {hero} sleeps.", None)],
        "My oldest friend sold us out for money."),
    "realization": ("a conflict resolved by the protagonist's own realization, without help", [
        ("{hero} sits alone on a pier at dawn, then tears up a resignation letter and smiles.",
         "I was running from the wrong thing all along."),
        ("{hero} stares into a mirror for a long time, then picks up the violin he had abandoned.",
         "Nobody else can do this for me.")],
        "Nobody told me, I just finally understood what I had to change."),
    "chase": ("a vehicle chase", [
        ("{hero}'s car swerves through traffic with two black vans in pursuit.",
         "Faster, they're right behind us!"),
        ("{hero} races a motorbike down the highway as police cars follow with sirens blaring.", None)],
        "They chased our car across half the city before we lost them."),
    "disguise": ("a character infiltrating a place in disguise", [
        ("{hero} puts on a waiter's uniform and a fake mustache, then slips into {villain}'s gala.",
         "Champagne, sir?"),
        ("{ally} dresses as a nurse and walks past the guards into the hospital ward.", "Go ahead, nurse.")],
        "I got past the guards dressed as one of the cleaning staff."),
    "sacrifice": ("a character sacrificing themselves to save others", [
        ("{ally} stays behind to hold the bridge as the others escape, and the bridge collapses under {ally}.",
         "Go! I'll hold them off!"),
        ("{hero} pushes {ally} into the last lifeboat and stays on the sinking ship.", "There's no room. Go!")],
        "She gave her life so the rest of us could get out."),
    "disaster": ("a natural disaster threatening the characters", [
        ("A flood sweeps through {place} and {hero} pulls people onto a rooftop.",
         "Grab my hand, the water's still rising!"),
        ("The ground shakes violently and buildings crumble around {hero} during an earthquake.", None)],
        "The earthquake flattened half of {place}."),
    "animals": ("someone using technology to interact with animals", [
        ("{ally} fits a GPS collar on a sedated tiger and checks its signal on a tablet.",
         "Signal's strong, we can track her now."),
        ("{hero} steers a drone to guide a herd of wild horses away from a fire.", None)],
        "With the tracking chips we can follow every wolf in the valley."),
}
NC_SINGLE = ["Which story features {np}?", "In which video does the plot include {np}?"]
NC_PAIR = ["Which two videos feature {np}?", "Which two films include {np}?"]
NC_SUBSET = ["Which videos feature {np}?", "In which videos does the story include {np}?"]
PAIRS = [(1, 2), (2, 3), (3, 4), (1, 4)]
SUBSETS = [s for n in range(1, 5) for s in itertools.combinations(range(1, 5), n)]
PAIR_STYLES = ["Video{a} and Video{b}", "Videos {a} and {b}", "Videos {a} & {b}", "Video {a} & Video {b}"]

# fmt: on


def make_cast(rng: random.Random) -> dict[str, str]:
    hero, villain = rng.sample(MEN, 2)
    ally = rng.choice(WOMEN)
    return {"hero": hero, "ally": ally, "villain": villain, "place": rng.choice(PLACES), "item": rng.choice(ITEMS)}


def neutral_filler(cast: dict[str, str]) -> Filler:
    def filler(rng: random.Random) -> tuple[str, str | None]:
        visual, speech = rng.choice(NEUTRAL)
        return visual.format(**cast), speech.format(**cast) if speech else None

    return filler


def _motif_beat(rng: random.Random, key: str, cast: dict[str, str], told: bool) -> Beat:
    _, shown, line = MOTIFS[key]
    if told:  # only the dialogue carries it; the frames show two people talking
        return Beat(QUIET.format(**cast), rng.uniform(8, 20), line.format(**cast), key=key, tool="listen")
    visual, speech = rng.choice(shown)
    return Beat(visual.format(**cast), rng.uniform(10, 30), speech.format(**cast) if speech else None, key=key)


def narrative_comprehension(rng: random.Random, script_id: str) -> Script:
    motif = rng.choice(sorted(MOTIFS))
    np = MOTIFS[motif][0]
    form = rng.choice(["single", "pair", "subset"])
    if form == "single":
        correct = [rng.randint(1, 4)]
        style = rng.choice(["Video {i}", "Video{i}"])
        options, answer = lettered([style.format(i=i) for i in range(1, 5)]), "ABCD"[correct[0] - 1]
        question = rng.choice(NC_SINGLE).format(np=np)
    elif form == "pair":
        index = rng.randrange(4)
        correct = list(PAIRS[index])
        style = rng.choice(PAIR_STYLES)
        options, answer = lettered([style.format(a=a, b=b) for a, b in PAIRS]), "ABCD"[index]
        question = rng.choice(NC_PAIR).format(np=np)
    else:
        subsets = rng.sample(SUBSETS, 4)
        index = rng.randrange(4)
        correct = list(subsets[index])
        options, answer = lettered([_subset_text(s) for s in subsets]), "ABCD"[index]
        question = rng.choice(NC_SUBSET).format(np=np)
    videos, evidences = [], []
    others = [m for m in sorted(MOTIFS) if m != motif]
    for index in range(1, 5):
        cast = make_cast(rng)
        keys = rng.sample(others, rng.randint(0, 2)) + ([motif] if index in correct else [])
        rng.shuffle(keys)
        beats = [_motif_beat(rng, key, cast, told=rng.random() < 0.3) for key in keys]
        duration = rng.choice([450.04, 450.08, round(rng.uniform(300, 600), 2)])
        events, keyed = lay_out(rng, beats, duration, neutral_filler(cast), piece=(8, 30), empty=0.05)
        name = f"movie/{rng.choice(PREFIXES)}-{rng.randint(1, 40)}.mp4"
        videos.append(VideoScript(index=index, duration=duration, name=name, events=events))
        if index in correct:
            beat = next(b for b in beats if b.key == motif)
            evidences.append(evidence(index, keyed[motif], np, tool=beat.tool))
    return Script(
        id=script_id,
        task="NC",
        question=question,
        options=options,
        answer=answer,
        videos=videos,
        evidence=evidences,
        reference={"motif": motif, "form": form},
    )


def _subset_text(videos: tuple[int, ...]) -> str:
    if len(videos) == 4:
        return "All four videos"
    if len(videos) == 1:
        return f"Video {videos[0]} only"
    return (
        "Videos "
        + ", ".join(str(v) for v in videos[:-1])
        + (", and " if len(videos) > 2 else " and ")
        + str(videos[-1])
    )
