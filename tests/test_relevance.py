"""One focus ranking for the simulator and the describer: rare shared stems count, order is kept, ties go earlier."""

from agentcvr.perception.describer import DescriberConfig, FrameDescriber, Scene
from agentcvr.relevance import most_relevant, rarity, terms

LINES = [
    "Jack and Kate argue in a parked car.",
    "Jack reads a newspaper on a bench.",
    "Jack plays a tape recording to the police chief.",
    "Jack and Kate argue in a parked car.",
]
FOCUS = "Which videos feature a physical object that is key to resolving the conflict? Jack's tape recordings"


def test_the_rare_shared_stem_outweighs_common_ones_and_order_is_kept():
    found = [terms(line) for line in LINES]
    assert "record" in terms("recordings") & found[2]  # stems: "recordings" matches "recording"
    assert rarity(found)["jack"] < rarity(found)["tape"]
    assert most_relevant(found, FOCUS, keep=2) == [0, 2]  # the tape line, and the earlier of the tied rest
    assert most_relevant(found, FOCUS, keep=9) == [0, 1, 2, 3]  # room for all: nothing ranked


def test_the_describer_keeps_the_lines_the_simulator_would():
    scenes = [Scene(i, i, 10.0 * i, 10.0 * i + 5, text=line) for i, line in enumerate(LINES)]
    describer = FrameDescriber(DescriberConfig(ocr=False, max_scenes=2))
    try:
        shown = describer.render(scenes, FOCUS).splitlines()
    finally:
        describer.close()
    assert len(shown) == 2 and "tape" in shown[1] and shown[0].startswith("[0.0s - 5.0s]")
