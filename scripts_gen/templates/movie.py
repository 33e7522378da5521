"""NC (narrative comprehension, 4 movies) and PI (plot inference, beginning + ending clips of one movie, 6 options).

A movie is minutes of neutral scenes (dialogue, travel, scenery) with a few plot beats placed among them. NC asks
which movies contain a plot motif; PI hides the middle of a movie and asks which twist happened there, the ending
showing its consequences. A beat is sometimes only told in dialogue (its frames are uninformative), so the agent
has to listen as well as look.
"""

from __future__ import annotations

import itertools
import random

from scripts_gen.schema import Script, VideoScript
from scripts_gen.templates.layout import Beat, cut, evidence, lay_out, lettered, place_correct

# Heroes and villains are men, allies women, so that the texts' pronouns agree.
MEN = ["Jack", "Dev", "Omar", "Tomas", "Rafael", "Victor", "Kofi", "Hugo", "Ivan", "Leo"]
WOMEN = ["Mara", "Lena", "Kate", "Ines", "Yuki", "Nadia", "Elena", "Greta", "Amara", "Sofia"]
PLACES = ["the harbor town", "the desert highway", "the jungle camp", "the mountain village", "the city center",
          "the old factory district", "the island resort", "the border crossing"]
ITEMS = ["diamond", "painting", "hard drive", "crown", "vaccine sample", "ancient idol"]
PREFIXES = ["BKL", "FAF", "PAW", "MCT", "QRS"]

NEUTRAL: list[tuple[str, str | None]] = [
    ("{hero} drives through {place} at dusk with the radio on.", None),
    ("{hero} and {ally} eat breakfast in a small kitchen.", "{ally}: You barely slept again."),
    ("{hero} studies a map spread on a table.", "{hero}: We go in at first light."),
    ("A wide shot of {place} under a grey sky.", None),
    ("{hero} walks down a crowded market street.", None),
    ("{ally} repairs a motorbike in a garage.", "{ally}: Hand me the wrench, would you?"),
    ("{villain} watches the city from a tall office window.", "{villain}: Everything is on schedule."),
    ("{hero} looks at an old photograph and sighs.", None),
    ("Rain streaks down a window as {hero} makes a phone call.", "{hero}: I'll call you when it's done."),
    ("{hero} and {ally} argue in a parked car.", "{ally}: You never listen to anyone."),
    ("Night falls over {place}; street lights flicker on.", None),
    ("{hero} trains alone in a gym, hitting a heavy bag.", None),
    ("{ally} laughs at a joke in a crowded bar.", "{ally}: That's the worst joke I've ever heard."),
    ("{hero} reads a newspaper on a bench.", None),
    ("A crowd gathers in a town square for a festival.", None),
    ("{hero} packs a bag in a motel room.", "{hero}: We leave tonight."),
    ("{villain} plays chess alone in a dark study.", None),
    ("{ally} feeds a stray cat on a doorstep.", "{ally}: Here you go, little one."),
]
QUIET = "{hero} and {ally} talk in low voices in a dim room."

# NC motifs: key -> (noun phrase for questions, shown beats [(visual, speech)], a line that only tells it)
MOTIFS: dict[str, tuple[str, list[tuple[str, str | None]], str]] = {
    "invasion": ("a home invasion as a key plot point", [
        ("Masked men force open the back door of {hero}'s house at night while the family hides upstairs.",
         "{hero}: Stay quiet, they're already inside the house."),
        ("Intruders smash a window and climb into {ally}'s living room, knocking over the lamps.",
         "{ally}: Someone's in the house! Call the police!")],
        "{ally}: Men broke into our house last night and tore the whole place apart."),
    "child": ("a character protecting a child", [
        ("{hero} shields a frightened little boy behind a car as shots ring out.", "{hero}: Keep your head down."),
        ("{hero} hides a young girl in a closet and stands guard at the door.",
         "{hero}: Nobody is going to hurt you, I promise.")],
        "{hero}: I swore to keep that kid safe, whatever it costs me."),
    "reunion": ("a family reunion as the emotional resolution", [
        ("{hero} runs across an airport hall and embraces the sister he lost as a child.",
         "{hero}: Twenty years... I thought I'd never see you again."),
        ("{ally} opens the door to find her father on the step, and they hug in tears.", "{ally}: Dad, you came home!")],
        "{ally}: After all these years my family is finally together again."),
    "object": ("a physical object that is key to resolving the conflict", [
        ("{hero} fits an old brass key from a locket into the vault door and it swings open, ending the standoff.",
         "{hero}: Mother's key. It was the answer all along."),
        ("{hero} plays a tape recording to the police chief that exposes {villain}.",
         "{villain}: Where did you get that tape?")],
        "{hero}: That little recorder is the only thing that can bring him down."),
    "capture": ("a character being captured or nearly captured", [
        ("Soldiers throw a net over {ally} and drag her into a truck.", "{ally}: Let me go!"),
        ("{villain}'s men corner {hero} in an alley and handcuff him to a pipe.",
         "{villain}: Did you really think you could run from me?")],
        "{ally}: They grabbed me on the bridge and locked me in a cellar for two days."),
    "creature": ("an attempt to bond with a huge creature", [
        ("{hero} slowly offers a hand to an enormous dragon, which lowers its head to sniff it.",
         "{hero}: Easy... I'm not going to hurt you."),
        ("{ally} swims beside a giant whale and rests her palm on its side.", "{ally}: She trusts us now.")],
        "{hero}: The giant beast lets me near it now; we understand each other."),
    "betrayal": ("a betrayal by a trusted friend", [
        ("{ally} hands a folder of the team's plans to {villain} in an empty parking garage.",
         "{villain}: Your friends will never suspect you."),
        ("{ally} empties the bullets from {hero}'s gun while {hero} sleeps.", None)],
        "{hero}: My oldest friend sold us out for money."),
    "realization": ("a conflict resolved by the protagonist's own realization, without help", [
        ("{hero} sits alone on a pier at dawn, then tears up a resignation letter and smiles.",
         "{hero}: I was running from the wrong thing all along."),
        ("{hero} stares into a mirror for a long time, then picks up the violin he had abandoned.",
         "{hero}: Nobody else can do this for me.")],
        "{hero}: Nobody told me, I just finally understood what I had to change."),
    "chase": ("a vehicle chase", [
        ("{hero}'s car swerves through traffic with two black vans in pursuit.", "{ally}: Faster, they're right behind us!"),
        ("{hero} races a motorbike down the highway as police cars follow with sirens blaring.", None)],
        "{ally}: They chased our car across half the city before we lost them."),
    "disguise": ("a character infiltrating a place in disguise", [
        ("{hero} puts on a waiter's uniform and a fake mustache, then slips into {villain}'s gala.",
         "{hero}: Champagne, sir?"),
        ("{ally} dresses as a nurse and walks past the guards into the hospital ward.", "Guard: Go ahead, nurse.")],
        "{ally}: I got past the guards dressed as one of the cleaning staff."),
    "sacrifice": ("a character sacrificing themselves to save others", [
        ("{ally} stays behind to hold the bridge as the others escape, and the bridge collapses under {ally}.",
         "{ally}: Go! I'll hold them off!"),
        ("{hero} pushes {ally} into the last lifeboat and stays on the sinking ship.", "{hero}: There's no room. Go!")],
        "{hero}: She gave her life so the rest of us could get out."),
    "disaster": ("a natural disaster threatening the characters", [
        ("A flood sweeps through {place} and {hero} pulls people onto a rooftop.",
         "{hero}: Grab my hand, the water's still rising!"),
        ("The ground shakes violently and buildings crumble around {hero} during an earthquake.", None)],
        "{ally}: The earthquake flattened half of {place}."),
    "animals": ("someone using technology to interact with animals", [
        ("{ally} fits a GPS collar on a sedated tiger and checks its signal on a tablet.",
         "{ally}: Signal's strong, we can track her now."),
        ("{hero} steers a drone to guide a herd of wild horses away from a fire.", None)],
        "{ally}: With the tracking chips we can follow every wolf in the valley."),
}
NC_SINGLE = ["Which story features {np}?", "In which video does the plot include {np}?"]
NC_PAIR = ["Which two videos feature {np}?", "Which two films include {np}?"]
NC_SUBSET = ["Which videos feature {np}?", "In which videos does the story include {np}?"]
PAIRS = [(1, 2), (2, 3), (3, 4), (1, 4)]
SUBSETS = [s for n in range(1, 5) for s in itertools.combinations(range(1, 5), n)]
PAIR_STYLES = ["Video{a} and Video{b}", "Videos {a} and {b}", "Videos {a} & {b}", "Video {a} & Video {b}"]

# PI twists: (option, setup seen in the beginning, consequence seen in the ending, line that tells it)
TWISTS: list[tuple[str, str, tuple[str, str], str]] = [
    ("{villain} took {hero}'s family hostage to force {hero} to cooperate.",
     "{hero} kisses his wife and son goodbye at the door of their house.",
     ("{hero} cuts the ropes binding his wife and son in a basement as police lights flash outside.",
      "{hero}: It's over. He'll never use you against me again."),
     "{hero}: He held my wife and son to make me do his dirty work."),
    ("{ally} secretly sold the team's plans to {villain}.", "{ally} takes a call, glances around and steps outside.",
     ("{ally} is led away in handcuffs while {hero} watches in silence.",
      "{hero}: I trusted you, and you sold us out to him."),
     "{hero}: {ally} was feeding {villain} our plans the whole time."),
    ("The {item} everyone was chasing turned out to be a worthless fake.",
     "{villain} shows his men a photo of the {item}.",
     ("{hero} drops the {item} on the floor and it cracks open, full of plaster.", "{hero}: All of this for a fake."),
     "{ally}: Turns out the {item} was a cheap copy all along."),
    ("{hero} was badly wounded in an ambush and had to recover.", "{hero} checks the pistol in his holster.",
     ("{hero} limps along a hospital corridor on crutches, one leg in a cast.",
      "Doctor: Another inch and that bullet would have cost you the leg."),
     "{ally}: After they ambushed you on the road, we didn't think you'd walk again."),
    ("A storm destroyed the only bridge and cut the town off.",
     "Dark clouds gather over {place} as the radio warns of a storm.",
     ("Workers rebuild a collapsed bridge as the river level drops.",
      "Mayor: Since the storm took the bridge, we've been on our own."),
     "Mayor: The storm washed the bridge away and nobody could reach us for weeks."),
    ("{villain} escaped from custody during a prison transfer.", "{villain} sits in a prison cell, watching the guards.",
     ("Wanted posters with {villain}'s face are pasted along the harbor wall.",
      "Officer: He's been on the run since the transfer."),
     "Officer: He slipped away when we moved him between prisons."),
    ("An anonymous informant slipped {hero} the location of the hideout.",
     "A stranger in a grey coat watches {hero} from across the street.",
     ("{hero} rereads a crumpled note with an address on it, then burns it.",
      "{hero}: Whoever left me this note saved all our lives."),
     "{hero}: Someone I never met gave me the address of their hideout."),
    ("{hero} lost the {item} in the river during the escape.", "{hero} tucks the {item} into his jacket.",
     ("Divers search a riverbed with flashlights while {hero} watches from the bank.",
      "{hero}: It went into the water when the car went off the bridge."),
     "{hero}: The {item} is somewhere at the bottom of the river now."),
    ("Allied reinforcements arrived and drove off the attackers.",
     "{ally} sends a radio message asking for help.",
     ("Soldiers in unfamiliar uniforms bandage the defenders beside burnt-out enemy trucks.",
      "{hero}: If your unit hadn't arrived when it did, we'd all be dead."),
     "{hero}: We were finished until another unit showed up and pushed them back."),
    ("{hero} and {ally} fell in love.", "{hero} and {ally} bump into each other and exchange an awkward smile.",
     ("{hero} and {ally} exchange rings at a small seaside wedding.",
      "{ally}: Who knew a car crash could end in a wedding?"),
     "{ally}: Somewhere along the way I fell for {hero}."),
    ("{villain} confessed to the crime to avoid a public trial.",
     "Reporters crowd outside a courthouse as {villain} arrives.",
     ("A judge reads out a sentence while {villain} stands silent, head bowed.",
      "Judge: Given your full confession, the court sentences you to twelve years."),
     "Officer: He admitted everything so it would never go to trial."),
    ("{villain} planted an explosive on {hero}'s car.", "{villain} lingers near {hero}'s parked car in a garage.",
     ("Firefighters spray foam over the burnt shell of a car while {hero} sits bandaged in an ambulance.",
      "{hero}: If I'd started that engine a second earlier..."),
     "{ally}: Someone rigged your car to blow up."),
    ("The team found a map of the enemy base hidden in an abandoned office.",
     "{ally} searches an abandoned office, opening drawers.",
     ("{hero} spreads a hand-drawn map of a base on a crate and marks the guard posts.",
      "{ally}: Good thing that map was under the floorboards."),
     "{ally}: Without the map we found in that office we'd never have found the base."),
]
PI_QUESTION = ("The middle of the movie is missing: video 1 is its beginning and video 2 its ending. "
               "Which event most plausibly happened in between?")


def _cast(rng: random.Random) -> dict[str, str]:
    hero, villain = rng.sample(MEN, 2)
    ally = rng.choice(WOMEN)
    return {"hero": hero, "ally": ally, "villain": villain, "place": rng.choice(PLACES), "item": rng.choice(ITEMS)}


def _neutral_filler(cast: dict[str, str]):
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
        cast = _cast(rng)
        keys = rng.sample(others, rng.randint(0, 2)) + ([motif] if index in correct else [])
        rng.shuffle(keys)
        beats = [_motif_beat(rng, key, cast, told=rng.random() < 0.3) for key in keys]
        duration = rng.choice([450.04, 450.08, round(rng.uniform(300, 600), 2)])
        events, keyed = lay_out(rng, beats, duration, _neutral_filler(cast), piece=(8, 30), empty=0.05)
        name = f"movie/{rng.choice(PREFIXES)}-{rng.randint(1, 40)}.mp4"
        videos.append(VideoScript(index=index, duration=duration, name=name, events=events))
        if index in correct:
            beat = next(b for b in beats if b.key == motif)
            evidences.append(evidence(index, keyed[motif], np, tool=beat.tool))
    return Script(id=script_id, task="NC", question=question, options=options, answer=answer, videos=videos,
                  evidence=evidences, reference={"motif": motif, "form": form})


def _subset_text(videos: tuple[int, ...]) -> str:
    if len(videos) == 4:
        return "All four videos"
    if len(videos) == 1:
        return f"Video {videos[0]} only"
    return "Videos " + ", ".join(str(v) for v in videos[:-1]) + (", and " if len(videos) > 2 else " and ") + str(
        videos[-1]
    )


def plot_inference(rng: random.Random, script_id: str) -> Script:
    cast = _cast(rng)
    picks = rng.sample(TWISTS, 6)
    true = picks[0]
    options, answer = place_correct(rng, true[0].format(**cast), [t[0].format(**cast) for t in picks[1:]])
    duration = rng.choice([450.04, 450.08, round(rng.uniform(360, 600), 2)])
    begin_end = round(duration * rng.uniform(0.15, 0.35))
    ending_start = round(duration * rng.uniform(0.45, 0.85))
    filler = _neutral_filler(cast)
    setups = [Beat(t[1].format(**cast), rng.uniform(6, 15), key=str(i)) for i, t in enumerate(picks[:3])]
    rng.shuffle(setups)
    opening, keyed_open = lay_out(rng, setups, begin_end, filler, piece=(8, 30), empty=0.05)
    told = rng.random() < 0.3
    visual, speech = true[2]
    clue = (Beat(QUIET.format(**cast), rng.uniform(8, 20), true[3].format(**cast), key="clue", tool="listen") if told
            else Beat(visual.format(**cast), rng.uniform(10, 30), speech.format(**cast), key="clue"))
    closing, keyed_close = lay_out(rng, [clue], duration - ending_start, filler, piece=(8, 30), empty=0.05)
    name = f"movie/{rng.choice(PREFIXES)}-{rng.randint(1, 40)}.mp4"
    videos = [
        VideoScript(index=1, duration=begin_end, name=name, label="beginning", source=name, offset=0.0,
                    events=cut(opening, 0, begin_end)),
        VideoScript(index=2, duration=round(duration - ending_start, 3), name=name, label="ending", source=name,
                    offset=float(ending_start), events=closing),
    ]
    evidences = [evidence(1, keyed_open["0"], "what the characters are doing"),
                 evidence(2, keyed_close["clue"], "what happened to the characters", tool=clue.tool)]
    return Script(id=script_id, task="PI", question=PI_QUESTION, options=options, answer=answer, videos=videos,
                  evidence=evidences,
                  reference={"beginning": [0, begin_end], "ending": [ending_start, duration], "duration": duration})
