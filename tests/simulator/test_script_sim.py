"""The rule-based simulator: overlap, ranking, clipping, empty answers and no leaks."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.script import Event, Script, VideoScript
from simulator.noise import Noise
from simulator.script_sim import NO_SPEECH, NO_VISUAL, ScriptSimulator, terms


def test_observe_returns_overlapping_events_clipped_to_the_interval(pet_script, simulator):
    text = simulator.observe(pet_script.episode, Observe(video=1, start=5, end=22))
    assert text == "[5.0s - 10.0s] a grey cat sleeps on a sofa\n[20.0s - 22.0s] the cat drinks milk"


def test_nothing_scripted_there(pet_script, simulator):
    ep = pet_script.episode
    assert simulator.observe(ep, Observe(video=1, start=10, end=20)) == NO_VISUAL  # touching ends do not overlap
    assert simulator.listen(ep, Listen(video=2, start=0, end=40)) == NO_SPEECH


def test_listen_lines(pet_script, simulator):
    assert simulator.listen(pet_script.episode, Listen(video=1, start=2, end=30)) == "[2.0 - 10.0]: good morning kitty"


def test_no_leak_from_other_videos_or_times(pet_script, simulator):
    ep = pet_script.episode
    seen = simulator.observe(ep, Observe(video=2, start=0, end=40)) + simulator.listen(
        ep, Listen(video=2, start=0, end=40)
    )
    assert "cat" not in seen and "kitty" not in seen
    assert "milk" not in simulator.observe(ep, Observe(video=1, start=0, end=19.9))


def test_ranking_keeps_the_events_most_relevant_to_the_focus_in_time_order():
    events = [Event(start=i, end=i + 1, visual=f"a chef stirs soup step {i}") for i in range(20)]
    events[15] = Event(start=15, end=16, visual="a red knife falls on the floor")
    events[3] = Event(start=3, end=4, visual="the knife is washed")
    script = Script(
        id="k", task="CC", question="?", answer="A", videos=[VideoScript(index=1, duration=20, events=events)]
    )
    sim = ScriptSimulator({"k": script}, max_events=4)
    lines = sim.observe(script.episode, Observe(video=1, start=0, end=20, focus="knife")).splitlines()
    assert len(lines) == 4
    knives = [i for i, line in enumerate(lines) if "knife" in line]
    assert len(knives) == 2 and "washed" in lines[knives[0]] and "falls" in lines[knives[1]]  # kept, in time order
    assert lines == sorted(lines, key=lambda line: float(line[1:].split("s")[0]))


def test_ranking_weighs_rare_words_and_matches_word_forms():
    """A drone view names obj_5 in every line: the focus words that single out the evidence are the rare ones."""
    events = [
        Event(start=2 * i, end=2 * i + 2, visual=f"obj_5 (person in a green coat) waits, frame {i}.") for i in range(30)
    ]
    events[21] = Event(start=42, end=44, visual="A cyclist in a red jacket overtakes obj_5.")
    events[7] = Event(start=14, end=16, visual="A cyclist in a black jacket overtakes obj_5.")
    script = Script(
        id="u", task="MOC", question="?", answer="A", videos=[VideoScript(index=1, duration=60, events=events)]
    )
    sim = ScriptSimulator({"u": script}, max_events=2)
    text = sim.observe(script.episode, Observe(video=1, start=0, end=60, focus="How many cyclists overtake obj_5?"))
    assert text.splitlines() == [
        "[14.0s - 16.0s] A cyclist in a black jacket overtakes obj_5.",
        "[42.0s - 44.0s] A cyclist in a red jacket overtakes obj_5.",
    ]


def test_noise_is_deterministic_and_changes_the_text(pet_script):
    noise = Noise(seed=1, jitter_seconds=1.0, paraphrase_probability=1.0)
    noisy = ScriptSimulator({pet_script.id: pet_script}, noise=noise)
    ep, action = pet_script.episode, Observe(video=1, start=0, end=30)
    first = noisy.observe(ep, action)
    assert first == noisy.observe(ep, action)
    assert first != ScriptSimulator({pet_script.id: pet_script}).observe(ep, action)


def test_drop_everything_gives_the_empty_answer(pet_script):
    sim = ScriptSimulator({pet_script.id: pet_script}, noise=Noise(drop_probability=1.0))
    assert sim.observe(pet_script.episode, Observe(video=1, start=0, end=30)) == NO_VISUAL


def test_terms_are_the_same_from_many_threads_at_once():
    # GRPO rollouts run episodes in threads; one shared snowball stemmer garbled words and raised IndexError there
    text = "Reporters crowding outside the courthouse as generously relational conditional happiness arrives " * 20
    expected = terms(text)
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(found == expected for found in pool.map(lambda _: terms(text), range(100)))


def test_describer_style_writes_visual_lines_as_the_frame_describer_and_leaves_speech_alone(pet_script):
    """The rendered videos' observations read 'Text on screen: "<sentence>"; colours: ...': the simulator can write
    its visual lines that way, the reader's screen-text parser takes the sentence back, and speech is untouched."""
    from agentcvr.reading import _said

    styled = ScriptSimulator({pet_script.id: pet_script}, noise=Noise(describer_probability=1.0))
    plain = ScriptSimulator({pet_script.id: pet_script})
    ep = pet_script.episode
    look, listen = Observe(video=1, start=5, end=22), Listen(video=1, start=2, end=30)
    lines = styled.observe(ep, look).splitlines()
    assert lines[0].startswith('[5.0s - 10.0s] Text on screen: "a grey cat sleeps on a sofa"; colours: white ')
    assert all(line.endswith(".") for line in lines)
    said = [_said(line.split("] ", 1)[1]) for line in lines]
    assert said == [line.split("] ", 1)[1] for line in plain.observe(ep, look).splitlines()]
    assert styled.listen(ep, listen) == plain.listen(ep, listen)


def _steps_script() -> Script:
    """Ten 3-second steps, one every 10 s of a 100-s video."""
    events = [Event(start=10 * i, end=10 * i + 3, visual=f"step {i} of the recipe") for i in range(10)]
    return Script(
        id="f", task="CC", question="?", answer="A", videos=[VideoScript(index=1, duration=100, events=events)]
    )


def test_frame_sampling_sees_only_the_events_on_screen_at_the_calls_frames():
    script = _steps_script()
    sim = ScriptSimulator({"f": script}, max_events=20, sampling="frames")
    # 10 frames over 0-100 s sit at 5, 15, ..., 95 s: every one between two steps
    assert sim.observe(script.episode, Observe(video=1, start=0, end=100, num_frames=10)) == NO_VISUAL
    # 50 frames sit at 1, 3, 5, ... s: each step holds one
    seen = sim.observe(script.episode, Observe(video=1, start=0, end=100, num_frames=50)).splitlines()
    assert seen == [f"[{10 * i}.0s - {10 * i + 3}.0s] step {i} of the recipe" for i in range(10)]
    # a zoom at the default 16 frames over 0-20 s lands on both steps there
    zoom = sim.observe(script.episode, Observe(video=1, start=0, end=20))
    assert zoom.splitlines() == ["[0.0s - 3.0s] step 0 of the recipe", "[10.0s - 13.0s] step 1 of the recipe"]


def test_event_sampling_sees_every_event_in_the_interval_whatever_the_frames():
    script = _steps_script()
    sim = ScriptSimulator({"f": script}, max_events=20)
    assert len(sim.observe(script.episode, Observe(video=1, start=0, end=100, num_frames=10)).splitlines()) == 10


def test_an_unknown_sampling_is_refused():
    with pytest.raises(ValueError, match="unknown sampling 'pixels'"):
        ScriptSimulator({}, sampling="pixels")
