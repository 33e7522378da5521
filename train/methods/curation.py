"""OmniJigsaw's signal-based filters for real videos (seed 003, Sec. 3.5, first stage of Fig. 2).

A video is kept when it has both streams and
- visual dynamism: the share of static steps (mean absolute difference of adjacent frames, sampled at `fps`, below
  `static_mad`) is at most 70 %;
- audio: not silence (RMS above `min_rms_db` dBFS) and not constant noise (the variance of the normalized spectral
  flux, flux_t / mean flux, above `min_flux_variance`: steady noise has a flat flux, speech and events do not);
- speech ratio (Silero VAD, the model the paper names, shipped inside faster-whisper) between 30 % and 80 %.

    agentcvr curate-videos data/raw --out runs/curation.jsonl
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

import numpy as np
from pydantic import BaseModel, Field

from agentcvr.perception.audio import SAMPLE_RATE, load_audio
from agentcvr.perception.frames import load_decord
from agentcvr.perception.media import VideoUnreadable, probe


class CurationConfig(BaseModel):
    """Thresholds of the signal filters (the paper's where it gives them)."""

    fps: float = Field(default=2.0, description="Frames per second sampled for the static-scene test.")
    static_mad: float = Field(
        default=2.0, description="Mean abs. gray-level difference (0-255) below which a step is static."
    )
    max_static_share: float = Field(default=0.70, description="OmniJigsaw: static scenes above 70 % are rejected.")
    min_rms_db: float = Field(default=-45.0, description="Audio RMS below this (dBFS) is silence.")
    min_flux_variance: float = Field(
        default=0.5, description="Normalized spectral-flux variance below this is steady noise."
    )
    min_speech: float = Field(default=0.30, description="OmniJigsaw's speech-ratio band, low end.")
    max_speech: float = Field(default=0.80, description="OmniJigsaw's speech-ratio band, high end.")


@dataclass
class Verdict:
    """One video's measurements and whether it passes; `reasons` names each failed filter."""

    path: str
    keep: bool = False
    static_share: float | None = None
    rms_db: float | None = None
    flux_variance: float | None = None
    speech_ratio: float | None = None
    reasons: list[str] = field(default_factory=list)

    def row(self) -> dict:
        return asdict(self)


def static_share(frames: np.ndarray, threshold: float = 2.0) -> float:
    """Share of adjacent frame pairs whose mean absolute gray difference is below `threshold`; frames (K, H, W, 3)."""
    if len(frames) < 2:
        raise ValueError("static_share needs at least two frames")
    gray = frames.astype(np.float32).mean(axis=3)
    mad = np.abs(np.diff(gray, axis=0)).mean(axis=(1, 2))
    return float((mad < threshold).mean())


def rms_db(samples: np.ndarray, floor: float = -120.0) -> float:
    """RMS level in dBFS, never below `floor` (digital silence reads as the floor, which JSON can hold)."""
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if samples.size else 0.0
    return max(20 * math.log10(rms), floor) if rms > 0 else floor


def flux_variance(samples: np.ndarray, n_fft: int = 512, hop: int = 256) -> float:
    """Variance of the spectral flux divided by its mean: ~0.1 for steady noise, well above 1 for speech."""
    if samples.size < n_fft * 3:
        raise ValueError(f"need at least {n_fft * 3} samples for the spectral flux, got {samples.size}")
    frames = np.lib.stride_tricks.sliding_window_view(samples, n_fft)[::hop] * np.hanning(n_fft)
    spectrum = np.abs(np.fft.rfft(frames, axis=1))
    flux = np.maximum(np.diff(spectrum, axis=0), 0).sum(axis=1)
    mean = flux.mean()
    return float(np.var(flux / mean)) if mean > 0 else 0.0


def speech_ratio(samples: np.ndarray) -> float:
    """Share of the audio Silero VAD marks as speech (16 kHz mono float32)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    if not samples.size:
        return 0.0
    options = VadOptions(min_silence_duration_ms=300, speech_pad_ms=100)  # phrase-level, not 2 s chunks
    spans = get_speech_timestamps(samples, options, sampling_rate=SAMPLE_RATE)
    return sum(s["end"] - s["start"] for s in spans) / samples.size


def sample_frames(path: str, fps: float, size: tuple[int, int] = (64, 48)) -> np.ndarray:
    """Frames every 1/fps seconds at a small size (the test needs motion, not detail)."""
    decord = load_decord()
    try:
        reader = decord.VideoReader(path, ctx=decord.cpu(0), width=size[0], height=size[1], num_threads=1)
        step = max(1, round(float(reader.get_avg_fps()) / fps))
        return reader.get_batch(list(range(0, len(reader), step))).asnumpy()
    except decord.DECORDError as error:
        raise VideoUnreadable(f"{path}: decord could not decode frames: {str(error).splitlines()[0]}") from error


def assess(path: str | os.PathLike, cfg: CurationConfig | None = None) -> Verdict:
    """Run the three filters on one video file; every failure is a reason, never an exception for bad media."""
    cfg = cfg or CurationConfig()
    verdict = Verdict(path=str(path))
    try:
        info = probe(path)
        verdict.static_share = static_share(sample_frames(str(path), cfg.fps), cfg.static_mad)
        if verdict.static_share > cfg.max_static_share:
            verdict.reasons.append(f"static: {verdict.static_share:.0%} of steps > {cfg.max_static_share:.0%}")
        if not info.has_audio:
            verdict.reasons.append("no audio stream")
            return verdict
        samples = load_audio(path, 0.0, info.duration)
        verdict.rms_db = rms_db(samples)
        verdict.flux_variance = flux_variance(samples)
        verdict.speech_ratio = speech_ratio(samples)
    except (VideoUnreadable, ValueError, OSError) as error:
        verdict.reasons.append(f"unreadable: {error}")
        return verdict
    if verdict.rms_db < cfg.min_rms_db:
        verdict.reasons.append(f"silence: RMS {verdict.rms_db:.1f} dBFS < {cfg.min_rms_db:g}")
    elif verdict.flux_variance < cfg.min_flux_variance:
        verdict.reasons.append(
            f"constant noise: spectral-flux variance {verdict.flux_variance:.2f} < {cfg.min_flux_variance:g}"
        )
    if not cfg.min_speech <= verdict.speech_ratio <= cfg.max_speech:
        verdict.reasons.append(
            f"speech ratio {verdict.speech_ratio:.0%} outside {cfg.min_speech:.0%}-{cfg.max_speech:.0%}"
        )
    verdict.keep = not verdict.reasons
    return verdict
