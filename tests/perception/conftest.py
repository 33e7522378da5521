"""Rendered files with known facts, and broken files, for the real-perception tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from scripts_gen.known_facts import render_facts


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """(script, episode with paths, folder) of tests/rendered.py's facts script."""
    if any(shutil.which(tool) is None for tool in ("ffmpeg", "espeak-ng")):
        pytest.skip("needs ffmpeg and espeak-ng")
    return render_facts(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def video(rendered) -> Path:
    """Video 2 of the facts script: 40 s, the dog from 5 to 12 s, speech at 5 s."""
    return Path(rendered[1].videos[1].path)


@pytest.fixture(scope="session")
def silent_video(video, tmp_path_factory) -> Path:
    """The same video with its audio stream removed."""
    path = tmp_path_factory.getbasetemp() / "no-audio.mp4"
    if not path.exists():
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(video), "-an", "-c:v", "copy", str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def corrupt_video(video, tmp_path_factory) -> Path:
    """Bytes of an MP4 with its header destroyed."""
    path = tmp_path_factory.getbasetemp() / "corrupt.mp4"
    data = bytearray(video.read_bytes())
    data[:4096] = b"\x00" * 4096
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="session")
def audio_agent():
    """Whisper tiny.en, fetched offline by `ensure_model` on first use."""
    from agentcvr.perception.audio import AudioAgent

    return AudioAgent()
