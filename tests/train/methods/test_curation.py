"""OmniJigsaw's signal filters on real media made here: espeak-ng speech, ffmpeg moving/static video, numpy noise,
digital silence; and the `agentcvr curate-videos` command over that folder (report rows, resume, bad options)."""

from __future__ import annotations

import json
import shutil
import subprocess
import wave

import numpy as np
import pytest
from typer.testing import CliRunner

from train.methods.curation import assess, flux_variance, rms_db, speech_ratio, static_share

pytestmark = pytest.mark.skipif(
    not (shutil.which("ffmpeg") and shutil.which("espeak-ng")), reason="needs ffmpeg and espeak-ng (make setup)"
)
SENTENCE = "The chef cuts the onions and puts them in the pan. Then she adds salt and stirs for a while."


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


def write_wav(path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1), handle.setsampwidth(2), handle.setframerate(16000)
        handle.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def mux(out, video: str, audio=None) -> None:
    """A 10 s, 160x120, 10 fps H.264 video from a lavfi source (`testsrc2` moves, `color` is static)."""
    inputs = ["-f", "lavfi", "-i", f"{video}size=160x120:rate=10:duration=10"]
    audio_args = ["-i", str(audio), "-c:a", "aac"] if audio else ["-an"]
    ffmpeg(*inputs, *audio_args[:2], "-t", "10", "-c:v", "libx264", "-pix_fmt", "yuv420p", *audio_args[2:], str(out))


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("media")
    raw = root / "raw"
    raw.mkdir()
    subprocess.run(["espeak-ng", "-w", str(raw / "speech.wav"), SENTENCE], check=True)  # ~5.5 s of speech
    # 10 s: 1 s silence, the sentence, silence -> ~55 % speech
    ffmpeg("-i", str(raw / "speech.wav"), "-af", "aresample=16000,adelay=1000|1000,apad=whole_dur=10", "-ac", "1",
           "-t", "10", str(raw / "speech10.wav"))  # fmt: skip
    subprocess.run(["espeak-ng", "-s", "190", "-w", str(raw / "talk.wav"), " ".join([SENTENCE] * 3)], check=True)
    ffmpeg("-i", str(raw / "talk.wav"), "-af", "aresample=16000", "-ac", "1", "-t", "10", str(raw / "talk10.wav"))
    rng = np.random.default_rng(0)
    write_wav(raw / "noise.wav", 0.3 * rng.standard_normal(160_000))  # steady white noise, 10 s
    write_wav(raw / "silence.wav", np.zeros(160_000))
    videos = root / "videos"
    videos.mkdir()
    mux(videos / "good.mp4", "testsrc2=", raw / "speech10.wav")
    mux(videos / "static.mp4", "color=c=gray:", raw / "speech10.wav")
    mux(videos / "noise.mp4", "testsrc2=", raw / "noise.wav")
    mux(videos / "silent.mp4", "testsrc2=", raw / "silence.wav")
    mux(videos / "talkative.mp4", "testsrc2=", raw / "talk10.wav")
    mux(videos / "mute.mp4", "testsrc2=")  # no audio stream at all
    (videos / "broken.mp4").write_bytes(b"not a video")
    return videos


def test_each_filter_on_its_own_signal(media):
    from agentcvr.perception.audio import load_audio

    frames = np.stack(
        [np.full((4, 4, 3), 100, np.uint8), np.full((4, 4, 3), 101, np.uint8), np.full((4, 4, 3), 140, np.uint8)]
    )
    assert static_share(frames, threshold=2.0) == 0.5  # diffs 1 (static) and 39 (moving)
    assert rms_db(np.full(100, 0.1)) == pytest.approx(-20.0) and rms_db(np.zeros(10)) == -120.0
    speech, noise = load_audio(media / "good.mp4", 0, 10), load_audio(media / "noise.mp4", 0, 10)
    assert flux_variance(speech) > 1.0 > 0.1 > flux_variance(noise)  # speech flickers, white noise is flat
    assert 0.4 < speech_ratio(speech) < 0.7  # 5.5 s of speech in 10 s
    assert speech_ratio(noise) < 0.1


@pytest.mark.parametrize(
    ("name", "keep", "reason"),
    [
        ("good.mp4", True, None),
        ("static.mp4", False, "static"),  # a gray frame for 10 s
        ("noise.mp4", False, "constant noise"),
        ("silent.mp4", False, "silence"),
        ("talkative.mp4", False, "speech ratio"),  # speech fills > 80 %
        ("mute.mp4", False, "no audio stream"),
        ("broken.mp4", False, "unreadable"),
    ],
)
def test_verdicts(media, name, keep, reason):
    verdict = assess(media / name)
    assert verdict.keep is keep
    assert reason is None or any(r.startswith(reason) for r in verdict.reasons), verdict.reasons


def test_curate_videos_command_reports_and_resumes(media, tmp_path):
    from agentcvr.cli import app

    out = tmp_path / "curation.jsonl"
    first = CliRunner().invoke(app, ["curate-videos", str(media), "--out", str(out)])
    assert first.exit_code == 0, first.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7 and [r["path"].rsplit("/", 1)[1] for r in rows if r["keep"]] == ["good.mp4"]
    again = CliRunner().invoke(app, ["curate-videos", str(media), "--out", str(out)])
    assert "7 already in" in again.output and len(out.read_text().splitlines()) == 7  # nothing redone
    bad = CliRunner().invoke(app, ["curate-videos", str(media), "-o", "max_static=0.5"])
    assert bad.exit_code != 0 and "max_static_share" in bad.output
