"""The audio agent end to end: rendered MP4 -> PyAV seek -> faster-whisper tiny.en -> `[s - e]: text` lines."""

from __future__ import annotations

import re

import numpy as np
import pytest

from agentcvr.perception.audio import NO_SPEECH, AudioAgent, AudioConfig, load_audio
from agentcvr.perception.media import IntervalOutsideVideo, NoAudioTrack, VideoNotFound, VideoUnreadable

pytestmark = pytest.mark.slow
LINE = re.compile(r"^\[(\d+\.\d) - (\d+\.\d)\]: (.+)$")


def test_load_audio_returns_the_interval_at_16k(video):
    speech = load_audio(video, 5.0, 7.0)
    silence = load_audio(video, 20.0, 22.0)
    assert speech.dtype == np.float32 and len(speech) == 32000
    assert np.sqrt(np.mean(speech**2)) > 0.01 > np.sqrt(np.mean(silence**2))


def test_spoken_words_come_back_with_video_times(audio_agent, video):
    text = audio_agent.listen(video, 0, 40)
    match = LINE.match(text.splitlines()[0])
    assert match, text
    start, end = float(match[1]), float(match[2])
    assert 4.0 <= start <= 6.0 and start < end <= 12.0  # espeak-ng starts speaking at 5.05 s
    assert "fast today" in match[3].lower()
    assert len(text.splitlines()) == 1  # nothing invented in the 28 s of silence after it


def test_times_are_relative_to_the_clip(audio_agent, rendered):
    _, episode, _ = rendered
    clip = episode.videos[3]  # "Look at the kite." at 3 s into the clip that starts 25 s into the file
    text = audio_agent.listen(clip.path, 0, 15, offset=clip.offset)
    match = LINE.match(text)
    assert match and "kite" in match[3].lower(), text
    assert 2.0 <= float(match[1]) <= 4.0


def test_silence_is_no_speech(audio_agent, video):
    assert audio_agent.listen(video, 15, 40) == NO_SPEECH


def test_repeats_are_cached(audio_agent, video):
    first = audio_agent.transcribe(video, 0, 20)
    assert audio_agent.transcribe(video, 0, 20) is first


def test_errors_are_clear(audio_agent, video, silent_video, corrupt_video, tmp_path):
    with pytest.raises(NoAudioTrack, match="no audio track"):
        audio_agent.listen(silent_video, 0, 10)
    with pytest.raises(VideoNotFound):
        audio_agent.listen(tmp_path / "gone.mp4", 0, 10)
    with pytest.raises(VideoUnreadable):
        audio_agent.listen(corrupt_video, 0, 10)
    with pytest.raises(IntervalOutsideVideo):
        audio_agent.listen(video, 50, 60)


def test_paper_decode_settings_are_the_defaults():
    config = AudioConfig()
    assert (config.beam_size, config.temperature, config.condition_on_previous_text) == (5, 0.0, False)
    assert (config.no_speech_threshold, config.log_prob_threshold, config.language) == (0.6, -1.0, "en")


def test_a_model_folder_loads_without_the_hub(video):
    from agentcvr.models import ensure_model

    agent = AudioAgent(AudioConfig(model=str(ensure_model("whisper-tiny.en", progress=False))))
    assert "fast today" in agent.listen(video, 4, 13).lower()
