"""Media files: typed errors, a content fingerprint for cache keys, stream probing and interval checks.

Every failure a real video can cause is a `PerceptionError` whose message names the file and the problem, so the
agent loop can record it in the trace and tell the master agent something useful.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from agentcvr.perception.folder import FOLDER_FPS, folder_fingerprint, folder_size, is_frame_folder

# Seconds an interval may run past the end of a file before it counts as outside (durations are rounded),
# the same slack the action parser allows against the episode's durations.
END_TOLERANCE = 1.0
_FULL_HASH_BYTES = 64 << 20  # files up to this size are hashed whole
_SAMPLES, _SAMPLE_BYTES = 64, 64 << 10  # larger files: 64 evenly spaced 64 KiB windows plus the size


class PerceptionError(RuntimeError):
    """A real perception call failed for a reason worth telling the master agent."""


class VideoNotFound(PerceptionError, FileNotFoundError):
    """The video file does not exist."""


class VideoUnreadable(PerceptionError):
    """The file exists but cannot be decoded (not a video, truncated, corrupt)."""


class IntervalOutsideVideo(PerceptionError, ValueError):
    """The requested interval does not lie inside the video (or clip)."""


class NoAudioTrack(PerceptionError):
    """The video has no audio stream to transcribe."""


class PerceptionTimeout(PerceptionError, TimeoutError):
    """A perception call took longer than its time limit."""


@dataclass(frozen=True)
class MediaInfo:
    """What a file holds: seconds, frame rate and size of the video stream, and whether there is audio."""

    path: str
    duration: float
    fps: float
    width: int
    height: int
    has_audio: bool
    audio_duration: float


_fingerprints: dict[tuple[str, int, int], str] = {}
_infos: dict[str, MediaInfo] = {}
_lock = threading.Lock()


def existing(path: str | os.PathLike) -> Path:
    """The path as a `Path` (a video file or a folder of frames), or `VideoNotFound` naming it."""
    path = Path(path)
    if not path.is_file() and not is_frame_folder(path):
        raise VideoNotFound(f"video file not found: {path}")
    return path


def fingerprint(path: str | os.PathLike) -> str:
    """A content hash of the file: blake2b of the whole file up to 64 MiB; above that, of its size and 64 evenly
    spaced 64 KiB windows (fast on 300 GB datasets, and any re-encode or truncation changes it).
    Memoized per (path, size, mtime)."""
    path = existing(path)
    if is_frame_folder(path):
        return folder_fingerprint(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        if key in _fingerprints:
            return _fingerprints[key]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(stat.st_size).encode())
    with path.open("rb") as handle:
        if stat.st_size <= _FULL_HASH_BYTES:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        else:
            step = (stat.st_size - _SAMPLE_BYTES) // (_SAMPLES - 1)
            for i in range(_SAMPLES):
                handle.seek(i * step)
                digest.update(handle.read(_SAMPLE_BYTES))
    value = digest.hexdigest()
    with _lock:
        _fingerprints[key] = value
    return value


def probe(path: str | os.PathLike) -> MediaInfo:
    """Stream facts of a video file (cached by content fingerprint); `VideoUnreadable` if it has no decodable
    video stream."""
    import av

    path = existing(path)
    key = fingerprint(path)
    with _lock:
        if key in _infos:
            return _infos[key]
    if is_frame_folder(path):
        count, width, height = folder_size(path)
        if not count:
            raise VideoUnreadable(f"{path} holds no frame images")
        info = MediaInfo(str(path), count / FOLDER_FPS, FOLDER_FPS, width, height, False, 0.0)
        with _lock:
            _infos[key] = info
        return info
    try:
        with av.open(str(path)) as container:
            videos = container.streams.video
            if not videos:
                raise VideoUnreadable(f"{path} has no video stream")
            video = videos[0]
            fps = float(video.average_rate or video.guessed_rate or 0)
            duration = _stream_seconds(video, container)
            audio = container.streams.audio
            audio_duration = _stream_seconds(audio[0], container) if audio else 0.0
            info = MediaInfo(
                str(path),
                duration,
                fps,
                video.codec_context.width,
                video.codec_context.height,
                bool(audio),
                audio_duration,
            )
    except av.error.FFmpegError as error:
        raise VideoUnreadable(f"{path} is not a readable video: {error}") from error
    if info.duration <= 0 or info.fps <= 0 or info.width <= 0:
        raise VideoUnreadable(f"{path} has an empty or broken video stream ({info})")
    with _lock:
        _infos[key] = info
    return info


def _stream_seconds(stream, container) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    return container.duration / 1_000_000 if container.duration else 0.0


def file_interval(
    duration: float, offset: float, start: float, end: float, path: str = "", tolerance: float = END_TOLERANCE
) -> tuple[float, float]:
    """The interval [start, end] of a clip that begins at `offset`, as seconds in the file; an end up to
    `tolerance` past the file end is clamped, anything else outside raises `IntervalOutsideVideo`."""
    if not (0 <= start < end):
        raise IntervalOutsideVideo(f"interval {start:g}-{end:g} s is empty or negative")
    begin, finish = offset + start, offset + end
    if begin >= duration or finish > duration + tolerance:
        where = f" (clip starting at {offset:g} s)" if offset else ""
        raise IntervalOutsideVideo(
            f"interval {start:g}-{end:g} s{where} is outside {path or 'the video'}, which lasts {duration:.2f} s"
        )
    return begin, min(finish, duration)
