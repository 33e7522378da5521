"""BU (behavioral understanding): 3-4 short animal clips, "which videos show ...?", 1-3 correct (multi-select).

Each clip shows one behavior; the question names a function of behavior (avoiding predators, attracting a mate...)
and the correct videos are those whose behavior serves it. The options are the bare videos ("A. Video one."), so
only the clips decide. Behaviors carry tags; a tag marked `~` is arguable for that behavior, so such a behavior is
never used as a negative for that question.
"""

from __future__ import annotations

import itertools
import random
import string

from agentcvr.script import Event, Script, VideoScript
from scripts_gen.templates.layout import NUMBER_WORDS, Beat, evidence, lay_out, lettered

# fmt: off
# (subject, habitat, what it does, tags)
BEHAVIORS: list[tuple[str, str, str, str]] = [
    ("an octopus", "on a rocky reef", "changes its skin color and texture until it blends into the rocks", "predator"),
    ("a stick insect", "on a twig", "freezes motionless, swaying slightly like part of the branch", "predator"),
    ("a flatfish", "on the sea floor", "flicks sand over its body until only its eyes show", "predator"),
    ("a rabbit", "in tall grass", "freezes when a fox appears and then bolts into its burrow", "predator"),
    ("a gazelle herd", "on the savanna", "sprints away in zigzags as a cheetah rushes toward it", "predator ~social"),
    ("a hedgehog", "on a forest path", "rolls into a tight ball of spines when a badger sniffs at it",
     "predator defense ~contact"),
    ("a pufferfish", "near a coral head", "inflates into a spiky ball as a larger fish approaches",
     "predator defense ~warning"),
    ("a crab", "on a beach", "rears up and snaps its raised claws at a gull that lands beside it", "defense ~predator"),
    ("a porcupine", "at the edge of a forest", "raises its quills and backs toward a sniffing dog",
     "defense warning ~predator ~contact"),
    ("a rattlesnake", "among dry rocks", "coils and shakes its rattle loudly at an approaching hiker",
     "warning defense ~predator"),
    ("a meerkat", "on a sandy mound", "stands upright and gives a sharp alarm call as a hawk circles",
     "warning ~social"),
    ("a prairie dog", "at its burrow entrance", "barks repeatedly while the others in the colony dive underground",
     "warning ~social"),
    ("a cat", "in a backyard", "arches its back, puffs up its fur and hisses at a dog", "warning defense ~predator"),
    ("a hippo", "in a river pool", "opens its jaws wide and bellows at another hippo entering its pool",
     "territory warning ~social"),
    ("a robin", "on a fence post", "sings loudly and then chases another robin away from the garden",
     "territory ~social"),
    ("a male lion", "on a grassy plain", "sprays scent onto a bush and roars toward the horizon", "territory ~warning"),
    ("a gorilla", "in a forest clearing", "beats its chest and charges a few steps toward a rival male",
     "warning territory ~social"),
    ("a male peacock", "in a grassy clearing", "fans out its tail feathers and shakes them in front of a peahen",
     "mate"),
    ("a bowerbird", "on the forest floor", "arranges blue bottle caps around its bower while a female watches", "mate"),
    ("a male frog", "at the edge of a pond", "inflates its throat sac and croaks over and over", "mate ~territory"),
    ("a bird of paradise", "on a bare branch", "spreads its black cape and dances in front of a female", "mate"),
    ("two red deer stags", "in a misty meadow", "lock antlers and shove each other during the rut",
     "mate contact ~territory ~social"),
    ("a mother bird", "in a nest", "pushes chewed insects into the open beaks of her chicks", "young food ~contact"),
    ("a female crocodile", "at a river bank", "gently carries her hatchlings to the water in her jaws",
     "young contact"),
    ("a penguin father", "on the ice", "balances an egg on his feet under a fold of belly skin",
     "young ~rest ~contact"),
    ("a lioness", "near a flooded den", "carries a cub by the scruff of its neck to higher ground", "young contact"),
    ("a ewe", "in a pasture", "stands still while her lamb suckles", "young contact ~food"),
    ("two chimpanzees", "in a tree", "groom each other, picking carefully through each other's fur",
     "social contact"),
    ("two horses", "in a paddock", "nuzzle and rest their heads on each other's necks", "social contact"),
    ("a pod of dolphins", "in open water", "swims and leaps side by side in synchrony", "social ~contact"),
    ("two elephants", "at a waterhole", "touch trunks and rumble as they greet each other", "social contact"),
    ("a wolf pack", "on a snowy ridge", "howls together, heads raised", "social ~territory"),
    ("a heron", "in shallow water", "stands still and then spears a fish with its beak", "food contact"),
    ("a chimpanzee", "beside a termite mound", "pokes a stripped twig into the mound and licks off the termites",
     "food ~contact"),
    ("a squirrel", "under an oak tree", "buries acorns one by one beneath the fallen leaves", "food ~contact"),
    ("a spider", "in the corner of its web", "wraps a trapped fly in silk", "food contact"),
    ("a bear", "at a waterfall", "swipes a salmon out of the water with its paw", "food contact"),
    ("a hummingbird", "at a flower bed", "hovers and sips nectar from a red flower", "food ~contact"),
    ("a crocodile", "on a river bank", "lies motionless in the sun with its mouth open", "rest"),
    ("a lizard", "on a flat stone", "presses its body flat against the warm rock", "rest"),
    ("a sloth", "high in a tree", "hangs asleep from a branch without moving", "rest"),
    ("a dog", "in a yard", "lies panting in the shade of a tree", "rest"),
    ("a jellyfish", "in the open sea", "drifts with the current, pulsing slowly", "~rest"),
    ("a vulture", "over a canyon", "soars in wide circles on a thermal without flapping", "~food ~rest"),
]

QUESTIONS: dict[str, list[str]] = {
    "predator": ["Which videos show animals behaving in a way that helps them avoid predators?",
                 "When a predator is nearby, which behaviors from the videos would most likely keep the animal safe?"],
    "defense": ["If a threat approaches, which animals respond with an immediate physical defense?",
                "Which videos show an animal physically defending itself against a threat?"],
    "warning": ["Which behaviors in the videos primarily serve as a warning to other animals?",
                "Which videos show an animal signalling danger or a threat to others?"],
    "territory": ["Which videos show animals defending their territory?",
                  "Which behaviors in the videos are most likely meant to keep rivals out of an area?"],
    "mate": ["Which behaviors in the videos are most likely meant to attract a mate?",
             "Which videos show courtship or competition for a mate?"],
    "young": ["Which behaviors in the videos are most critical for the survival of the young?",
              "Which videos show parental care?"],
    "social": ["Which videos show behavior that helps animals establish or maintain social relationships?",
               "Which videos show animals interacting with members of their own species in a friendly way?"],
    "food": ["Which videos show animals obtaining or storing food?",
             "Which behaviors in the videos are about feeding?"],
    "contact": ["Which videos show animals making physical contact with another organism?",
                "In which videos does the animal touch another living creature?"],
    "rest": ["Which videos show animals conserving energy or regulating their body temperature?",
             "Which behaviors in the videos are mainly about resting or warming up?"],
}

CAMERA = ["The camera slowly zooms in.", "The camera pans across the scene.", "The image shakes briefly.",
          "Leaves sway in the wind in the foreground.", "The light changes as a cloud passes.",
          "The camera refocuses on the background.", "Dust drifts across the frame."]
# fmt: on


def _tags(tags: str) -> tuple[set[str], set[str]]:
    words = tags.split()
    return {w for w in words if not w.startswith("~")}, {w[1:] for w in words if w.startswith("~")}


def _clip(rng: random.Random, index: int, behavior: tuple[str, str, str, str]) -> tuple[VideoScript, Event]:
    subject, habitat, action, _ = behavior
    duration = round(rng.uniform(3.0, 20.0), 3)
    intro = f"{subject[0].upper()}{subject[1:]} is visible {habitat}."
    key = Beat(f"{subject[0].upper()}{subject[1:]} {action}.", length=duration * rng.uniform(0.45, 0.75), key="key")
    beats = [Beat(intro, length=min(2.0, duration * 0.15)), key] if rng.random() < 0.6 else [key]

    def filler(r: random.Random) -> tuple[str, None]:
        return r.choice(CAMERA), None

    events, keyed = lay_out(rng, beats, duration, filler, step=0.1, piece=(0.8, 3.0), empty=0.3)
    name = "behavior/" + "".join(rng.choices(string.ascii_uppercase, k=8)) + ".mp4"
    return VideoScript(index=index, duration=duration, name=name, events=events), keyed["key"]


def behavioral_understanding(rng: random.Random, script_id: str) -> Script:
    tag = rng.choice(sorted(QUESTIONS))
    positives = [b for b in BEHAVIORS if tag in _tags(b[3])[0]]
    negatives = [b for b in BEHAVIORS if tag not in _tags(b[3])[0] | _tags(b[3])[1]]
    count = 4 if rng.random() < 0.8 else 3
    # Uniform over the allowed answer sets (1-3 correct, never all), so no set is a better blind guess than another.
    sets = [c for k in range(1, min(3, count - 1) + 1) for c in itertools.combinations(range(count), k)]
    correct = list(rng.choice(sets))
    k = len(correct)
    chosen_pos, chosen_neg = rng.sample(positives, k), rng.sample(negatives, count - k)
    videos, evidences = [], []
    for i in range(count):
        behavior = chosen_pos.pop() if i in correct else chosen_neg.pop()
        video, key = _clip(rng, i + 1, behavior)
        videos.append(video)
        evidences.append(evidence(i + 1, key, "what the animal is doing"))
    options = lettered([f"Video {NUMBER_WORDS[i]}." for i in range(count)])
    return Script(
        id=script_id,
        task="BU",
        question=rng.choice(QUESTIONS[tag]),
        options=options,
        answer=[chr(ord("A") + i) for i in correct],
        videos=videos,
        evidence=evidences,
        reference={"tag": tag},
    )
