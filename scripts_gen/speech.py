"""Speech for rendered videos: espeak-ng utterances placed at their events' starts on one mono track.

Needs the Debian package espeak-ng; numpy.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentcvr.script import Event

ESPEAK_RATE = 22050  # espeak-ng's native sample rate


class RenderError(RuntimeError):
    """ffmpeg or espeak-ng failed or is missing; the message says which and why."""


def speech_track(
    events: list[Event],
    duration: float,
    rate: int = ESPEAK_RATE,
    words_per_minute: int = 145,
    max_words_per_minute: int = 260,
    voice: str = "en-us",
):
    """Float32 mono samples of the whole file with each utterance at its event's start; counts and overflows."""
    import numpy as np

    track = np.zeros(int(round(duration * rate)), dtype=np.float32)
    spoken = overflows = 0
    for event in events:
        if not event.speech:
            continue
        spoken += 1
        room = event.end - event.start - 0.1
        samples = espeak(event.speech, words_per_minute, voice)
        if len(samples) / ESPEAK_RATE > room:  # speak faster, within reason, to fit the event
            wpm = min(max_words_per_minute, int(words_per_minute * len(samples) / ESPEAK_RATE / room) + 10)
            samples = espeak(event.speech, wpm, voice)
        if len(samples) / ESPEAK_RATE > room:
            overflows += 1
        if rate != ESPEAK_RATE:
            samples = np.interp(
                np.arange(0, len(samples) * rate / ESPEAK_RATE) * ESPEAK_RATE / rate, np.arange(len(samples)), samples
            ).astype(np.float32)
        begin = int(round((event.start + 0.05) * rate))
        piece = samples[: max(0, len(track) - begin)]
        track[begin : begin + len(piece)] += piece
    np.clip(track, -1.0, 1.0, out=track)
    return track, spoken, overflows


def espeak(text: str, words_per_minute: int, voice: str):
    """espeak-ng speech as float32 samples at ESPEAK_RATE Hz."""
    import numpy as np

    result = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "--stdout", text], capture_output=True, check=False
    )
    if result.returncode != 0:
        raise RenderError(f"espeak-ng failed on {text[:40]!r}: {result.stderr.decode().strip()}")
    data = result.stdout
    start = data.find(b"data") + 8  # the streamed header's sizes are placeholders: read to the end
    if start < 8:
        raise RenderError("espeak-ng wrote no WAV data")
    pcm = np.frombuffer(data[start : start + (len(data) - start) // 2 * 2], dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def write_wav(path: Path, samples, rate: int) -> None:
    import wave

    import numpy as np

    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
