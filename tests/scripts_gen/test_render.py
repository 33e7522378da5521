"""The renderer: exact durations, speech where the script says, clips sharing a source file, a resumable manifest."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentcvr.script import Event, Script, VideoScript, write_jsonl
from scripts_gen.known_facts import facts_script, render_facts
from scripts_gen.render import RenderConfig, load_rendered, render_scripts, render_timeline
from tests.rendered import needs_tools

pytestmark = [needs_tools, pytest.mark.slow]  # renders MP4s with ffmpeg


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render_facts(tmp_path_factory.getbasetemp())


def test_files_last_exactly_as_scripted(rendered):
    from agentcvr.perception.media import probe

    script, episode, _ = rendered
    assert probe(episode.videos[0].path).duration == pytest.approx(30.0, abs=1e-6)  # 300 frames at 10 fps
    assert probe(episode.videos[1].path).duration == pytest.approx(40.0, abs=1e-6)
    film = probe(episode.videos[2].path)  # clips 0-20 s and 25-40 s of one source: 40 s
    assert film.duration == pytest.approx(40.0, abs=1e-6) and film.audio_duration == pytest.approx(40.0, abs=0.05)


def test_clips_of_one_source_share_a_file_with_their_offsets(rendered):
    _, episode, folder = rendered
    third, fourth = episode.videos[2], episode.videos[3]
    assert third.path == fourth.path == str(folder / "facts-1" / "film.mp4")
    assert (third.offset, fourth.offset) == (0.0, 25.0)
    manifest = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    assert manifest[0]["videos"][3] == {"index": 4, "path": "facts-1/film.mp4", "offset": 25.0, "duration": 15.0}


def test_speech_is_on_the_audio_track_at_the_event(rendered):
    from agentcvr.perception.audio import load_audio

    _, episode, _ = rendered
    path = episode.videos[1].path  # "The dog is very fast today." from 5 s

    def loudness(start, end):
        return float(np.sqrt(np.mean(load_audio(path, start, end) ** 2)))

    assert loudness(0, 5) < 1e-3 < 0.02 < loudness(5, 7)
    assert loudness(12, 40) < 1e-3


def test_rendering_skips_scripts_already_in_the_manifest(rendered):
    _, _, folder = rendered
    write_jsonl([facts_script()], folder.parent / "again.jsonl")
    report = render_scripts(folder.parent / "again.jsonl", folder, progress=False)
    assert (report.scripts, report.skipped) == (0, 1)
    ((script, episode),) = load_rendered(folder)
    assert script.id == episode.id == "facts-1" and episode.answer == "B"


def test_a_changed_script_is_rendered_again_and_the_others_are_kept(tmp_path):
    """Re-rendering one script (changed, or with overwrite) must not drop other scripts from the manifest."""

    def tiny(script_id: str, visual: str) -> Script:
        return Script(
            id=script_id,
            task="NC",
            question="Which video shows a dog?",
            options=["A. Video 1", "B. Video 2"],
            answer="A",
            videos=[VideoScript(index=1, duration=2, events=[Event(start=0, end=2, visual=visual)])],
        )

    config, folder = RenderConfig(fps=2, audio=False), tmp_path / "out"
    write_jsonl([tiny("one", "A dog."), tiny("two", "A cat.")], tmp_path / "first.jsonl")
    assert render_scripts(tmp_path / "first.jsonl", folder, config, progress=False).scripts == 2
    write_jsonl([tiny("one", "A dog runs."), tiny("two", "A cat.")], tmp_path / "second.jsonl")
    report = render_scripts(tmp_path / "second.jsonl", folder, config, progress=False)
    assert (report.scripts, report.skipped) == (1, 1)
    write_jsonl([tiny("two", "A cat.")], tmp_path / "third.jsonl")
    assert render_scripts(tmp_path / "third.jsonl", folder, config, overwrite=True, progress=False).scripts == 1
    loaded = {script.id: script for script, _ in load_rendered(folder)}
    assert set(loaded) == {"one", "two"} and loaded["one"].videos[0].events[0].visual == "A dog runs."


def test_long_speech_is_sped_up_to_fit_its_event(tmp_path):
    words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    events = [Event(start=0.5, end=3.0, visual="a counting scene", speech=words)]
    video = render_timeline(events, 4.0, tmp_path / "fast.mp4", RenderConfig(fps=5, max_words_per_minute=450))
    assert video.speech_events == 1 and video.speech_overflows == 0
    slow = render_timeline(events, 4.0, tmp_path / "slow.mp4", RenderConfig(fps=5, max_words_per_minute=150))
    assert slow.speech_overflows == 1  # counted, and cut at the end of the file


def test_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.jsonl"):
        load_rendered(tmp_path)


def test_attach_videos_names_episodes_that_were_not_rendered(rendered):
    from agentcvr.perception.real import attach_videos

    script, episode, folder = rendered
    attached = attach_videos([script.episode], folder)
    assert [v.path for v in attached[0].videos] == [v.path for v in episode.videos]
    other = script.with_episode(id="never-rendered").episode
    with pytest.raises(FileNotFoundError, match="never-rendered"):
        attach_videos([other], folder)
