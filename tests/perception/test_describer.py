"""The CPU frame describer: OCR of on-screen text, scene cuts placed on their frame, colours and motion."""

from __future__ import annotations

import numpy as np
import pytest

from agentcvr.perception.describer import (
    NO_VISUAL,
    DescriberConfig,
    FrameDescriber,
    colour_name,
    describe_motion,
    dominant_colours,
)
from agentcvr.perception.frames import Frames, FrameSampler
from agentcvr.perception.media import probe
from agentcvr.perception.real import _frame_probe
from scripts_gen.known_facts import FACTS
from tests.rendered import needs_tools

pytestmark = [needs_tools, pytest.mark.slow]  # tesseract and ffmpeg, ~8 s to set up


@pytest.fixture(scope="module")
def describer():
    describer = FrameDescriber()
    yield describer
    describer.close()


def _describe(describer, path, start, end, frames=16, focus="", offset=0.0):
    info = probe(path)
    sampled = FrameSampler().sample(path, start, end, frames, offset=offset, long_side=None)
    return describer.describe(sampled, focus, _frame_probe(str(path), offset), 1 / info.fps)


def test_on_screen_text_is_read_verbatim_with_exact_scene_times(describer, video):
    text = _describe(describer, video, 0, 40)
    assert text.startswith(f'[5.0s - 12.0s] Text on screen: "{FACTS["dog"]}"'), text
    assert "brown object moves left to right" in text
    assert len(text.splitlines()) == 1  # the grey screen before and after is not reported


def test_two_scenes_in_one_interval(describer, rendered):
    text = _describe(describer, rendered[1].videos[0].path, 0, 30)
    lines = text.splitlines()
    assert len(lines) == 2, text
    assert lines[0].startswith(f'[0.0s - 10.0s] Text on screen: "{FACTS["cat"]}"')
    assert lines[1].startswith(f'[20.0s - 25.0s] Text on screen: "{FACTS["milk"]}"')


def test_clip_times_are_clip_relative(describer, rendered):
    clip = rendered[1].videos[3]
    text = _describe(describer, clip.path, 0, 15, offset=clip.offset)
    assert text.startswith(f'[3.0s - 10.0s] Text on screen: "{FACTS["kite"]}"'), text


def test_an_empty_stretch_is_no_significant_action(describer, video):
    assert _describe(describer, video, 14, 40, frames=8) == NO_VISUAL


def test_ocr_words_below_the_confidence_cut_are_dropped_and_quotes_straightened():
    from agentcvr.perception.describer import _tsv_text

    header = "\t".join(
        ["level", "page", "block", "par", "line", "word", "left", "top", "width", "height", "conf", "text"]
    )
    rows = [("96.5", "Labels"), ("91.0", "‘overnight’"), ("31.0", "|"), ("88.0", "fridge.")]
    tsv = "\n".join([header] + ["\t".join(["5", "1", "1", "1", "1", "1", "0", "0", "9", "9", c, w]) for c, w in rows])
    assert _tsv_text(tsv, 50) == "Labels 'overnight' fridge."
    assert _tsv_text(tsv, 99) == ""


def test_cuts_are_bisected_to_the_frame():
    """Synthetic frames: red until 3.7 s, then blue; samples 2 s apart; a 10 fps probe finds 3.7 exactly."""

    def colour_at(t):
        return (200, 30, 30) if t < 3.7 - 1e-9 else (30, 30, 200)

    def frame(t):
        image = np.empty((36, 64, 3), np.uint8)
        image[:] = colour_at(t)
        return image

    times = (1.0, 3.0, 5.0, 7.0)
    frames = Frames(np.stack([frame(t) for t in times]), times, 0.0, 8.0, "synthetic")

    def probe_at(t):
        shown = int(t * 10 + 1e-6) / 10
        return frame(shown), shown

    scenes = FrameDescriber(DescriberConfig(ocr=False)).scenes(frames, probe_at, step=0.1)
    assert [(s.start, s.end) for s in scenes] == [(0.0, 3.7), (3.7, 8.0)]
    unrefined = FrameDescriber(DescriberConfig(ocr=False)).scenes(frames)
    assert [(s.start, s.end) for s in unrefined] == [(0.0, 4.0), (4.0, 8.0)]  # midway between samples


def test_focus_keeps_the_relevant_scenes_when_there_are_too_many():
    describer = FrameDescriber(DescriberConfig(ocr=False, max_scenes=1))
    from agentcvr.perception.describer import Scene

    scenes = [Scene(0, 0, 0.0, 5.0, text="a cat sleeps"), Scene(1, 1, 5.0, 9.0, text="a dog barks")]
    assert "dog" in describer.render(scenes, focus="which dog")
    assert "cat" in describer.render(scenes, focus="the cat")


@pytest.mark.parametrize(
    ("rgb", "name"),
    [
        ((210, 40, 40), "red"),
        ((40, 170, 60), "green"),
        ((40, 90, 220), "blue"),
        ((46, 74, 112), "dark blue"),  # dark: value below 0.45
        ((235, 210, 40), "yellow"),
        ((130, 80, 40), "brown"),  # a dark orange
        ((250, 250, 250), "white"),
        ((128, 128, 128), "grey"),
        ((5, 5, 5), "black"),
    ],
)
def test_colour_names(rgb, name):
    assert colour_name(rgb) == name


def test_dominant_colours_and_motion_of_a_moving_square():
    thumbs = np.empty((5, 36, 64, 3), np.float32)
    thumbs[:] = (46, 74, 112)
    for i in range(5):  # a red 8x8 square crossing from left to right
        thumbs[i, 20:28, 4 + 12 * i : 12 + 12 * i] = (210, 40, 40)
    assert dominant_colours(thumbs)[0][0] == "dark blue"
    assert describe_motion(thumbs) == "a red object moves left to right"
    assert describe_motion(np.repeat(thumbs[:1], 4, axis=0)) == ""  # still


@pytest.mark.parametrize("frames", [3, 5])
def test_the_frame_sampling_simulator_sees_what_the_describer_reads(describer, rendered, frames):
    """Video 1 holds the cat (0-10 s) and the milk (20-25 s): 3 frames over 0-28 s (4.7, 14, 23.3 s) land on both, 5
    frames (2.8, 8.4, 14, 19.6, 25.2 s) miss the milk, on the rendered video and in the simulator alike."""
    from agentcvr.actions import Observe
    from scripts_gen.known_facts import facts_script
    from simulator.script_sim import ScriptSimulator

    script = facts_script()
    look = Observe(video=1, start=0, end=28, num_frames=frames)
    simulated = ScriptSimulator({script.id: script}, sampling="frames").observe(script.episode, look)
    read = _describe(describer, rendered[1].videos[0].path, 0, 28, frames=frames)
    seen = {fact for fact in ("cat", "milk") if FACTS[fact] in read}
    assert seen == {fact for fact in ("cat", "milk") if FACTS[fact] in simulated}
    assert seen == ({"cat", "milk"} if frames == 3 else {"cat"})
