"""PI (plot inference): the beginning and the ending of one movie as videos 1 and 2, six candidate middles.

The two clips keep their place in the movie (`offset`, times relative to each clip). The beginning sets up three of
the candidate twists (so it alone does not decide); the ending shows, or has a character tell, the consequence of
the true one. The options are six twists of the same pool, the true one at a uniform position.
"""

from __future__ import annotations

import random

from agentcvr.script import Script, VideoScript
from scripts_gen.templates.layout import Beat, evidence, lay_out, place_correct
from scripts_gen.templates.movie import PREFIXES, QUIET, make_cast, neutral_filler

# fmt: off
# Twists: (option, setup seen in the beginning, consequence seen in the ending, line that tells it)
TWISTS: list[tuple[str, str, tuple[str, str], str]] = [
    ("{villain} took {hero}'s family hostage to force {hero} to cooperate.",
     "{hero} kisses his wife and son goodbye at the door of their house.",
     ("{hero} cuts the ropes binding his wife and son in a basement as police lights flash outside.",
      "It's over. He'll never use you against me again."),
     "He held my wife and son to make me do his dirty work."),
    ("{ally} secretly sold the team's plans to {villain}.", "{ally} takes a call, glances around and steps outside.",
     ("{ally} is led away in handcuffs while {hero} watches in silence.",
      "I trusted you, and you sold us out to him."),
     "{ally} was feeding {villain} our plans the whole time."),
    ("The {item} everyone was chasing turned out to be a worthless fake.",
     "{villain} shows his men a photo of the {item}.",
     ("{hero} drops the {item} on the floor and it cracks open, full of plaster.", "All of this for a fake."),
     "Turns out the {item} was a cheap copy all along."),
    ("{hero} was badly wounded in an ambush and had to recover.", "{hero} checks the pistol in his holster.",
     ("{hero} limps along a hospital corridor on crutches, one leg in a cast.",
      "Another inch and that bullet would have cost you the leg."),
     "After they ambushed you on the road, we didn't think you'd walk again."),
    ("A storm destroyed the only bridge and cut the town off.",
     "Dark clouds gather over {place} as the radio warns of a storm.",
     ("Workers rebuild a collapsed bridge as the river level drops.",
      "Since the storm took the bridge, we've been on our own."),
     "The storm washed the bridge away and nobody could reach us for weeks."),
    ("{villain} escaped from custody during a prison transfer.",
     "{villain} sits in a prison cell, watching the guards.",
     ("Wanted posters with {villain}'s face are pasted along the harbor wall.",
      "He's been on the run since the transfer."),
     "He slipped away when we moved him between prisons."),
    ("An anonymous informant slipped {hero} the location of the hideout.",
     "A stranger in a grey coat watches {hero} from across the street.",
     ("{hero} rereads a crumpled note with an address on it, then burns it.",
      "Whoever left me this note saved all our lives."),
     "Someone I never met gave me the address of their hideout."),
    ("{hero} lost the {item} in the river during the escape.", "{hero} tucks the {item} into his jacket.",
     ("Divers search a riverbed with flashlights while {hero} watches from the bank.",
      "It went into the water when the car went off the bridge."),
     "The {item} is somewhere at the bottom of the river now."),
    ("Allied reinforcements arrived and drove off the attackers.",
     "{ally} sends a radio message asking for help.",
     ("Soldiers in unfamiliar uniforms bandage the defenders beside burnt-out enemy trucks.",
      "If your unit hadn't arrived when it did, we'd all be dead."),
     "We were finished until another unit showed up and pushed them back."),
    ("{hero} and {ally} fell in love.", "{hero} and {ally} bump into each other and exchange an awkward smile.",
     ("{hero} and {ally} exchange rings at a small seaside wedding.",
      "Who knew a car crash could end in a wedding?"),
     "Somewhere along the way I fell for {hero}."),
    ("{villain} confessed to the crime to avoid a public trial.",
     "Reporters crowd outside a courthouse as {villain} arrives.",
     ("A judge reads out a sentence while {villain} stands silent, head bowed.",
      "Given your full confession, the court sentences you to twelve years."),
     "He admitted everything so it would never go to trial."),
    ("{villain} planted an explosive on {hero}'s car.", "{villain} lingers near {hero}'s parked car in a garage.",
     ("Firefighters spray foam over the burnt shell of a car while {hero} sits bandaged in an ambulance.",
      "If I'd started that engine a second earlier..."),
     "Someone rigged your car to blow up."),
    ("The team found a map of the enemy base hidden in an abandoned office.",
     "{ally} searches an abandoned office, opening drawers.",
     ("{hero} spreads a hand-drawn map of a base on a crate and marks the guard posts.",
      "Good thing that map was under the floorboards."),
     "Without the map we found in that office we'd never have found the base."),
]
PI_QUESTION = ("The middle of the movie is missing: video 1 is its beginning and video 2 its ending. "
               "Which event most plausibly happened in between?")
# fmt: on


def plot_inference(rng: random.Random, script_id: str) -> Script:
    cast = make_cast(rng)
    picks = rng.sample(TWISTS, 6)
    true = picks[0]
    options, answer = place_correct(rng, true[0].format(**cast), [t[0].format(**cast) for t in picks[1:]])
    duration = rng.choice([450.04, 450.08, round(rng.uniform(360, 600), 2)])
    begin_end = round(duration * rng.uniform(0.15, 0.35))
    ending_start = round(duration * rng.uniform(0.45, 0.85))
    filler = neutral_filler(cast)
    setups = [Beat(t[1].format(**cast), rng.uniform(6, 15), key=str(i)) for i, t in enumerate(picks[:3])]
    rng.shuffle(setups)
    opening, keyed_open = lay_out(rng, setups, begin_end, filler, piece=(8, 30), empty=0.05)
    told = rng.random() < 0.3
    visual, speech = true[2]
    clue = (
        Beat(QUIET.format(**cast), rng.uniform(8, 20), true[3].format(**cast), key="clue", tool="listen")
        if told
        else Beat(visual.format(**cast), rng.uniform(10, 30), speech.format(**cast), key="clue")
    )
    closing, keyed_close = lay_out(rng, [clue], duration - ending_start, filler, piece=(8, 30), empty=0.05)
    name = f"movie/{rng.choice(PREFIXES)}-{rng.randint(1, 40)}.mp4"
    videos = [
        VideoScript(
            index=1,
            duration=begin_end,
            name=name,
            label="beginning",
            source=name,
            offset=0.0,
            events=opening,
        ),
        VideoScript(
            index=2,
            duration=round(duration - ending_start, 3),
            name=name,
            label="ending",
            source=name,
            offset=float(ending_start),
            events=closing,
        ),
    ]
    evidences = [
        evidence(1, keyed_open["0"], "what the characters are doing"),
        evidence(2, keyed_close["clue"], "what happened to the characters", tool=clue.tool),
    ]
    return Script(
        id=script_id,
        task="PI",
        question=PI_QUESTION,
        options=options,
        answer=answer,
        videos=videos,
        evidence=evidences,
        reference={"beginning": [0, begin_end], "ending": [ending_start, duration], "duration": duration},
    )
