"""Checks on what a request names or uploads, before any of it reaches the agent.

Paths stay under the media root (no `..`, no absolute paths, no symlink that leads out); files must be videos by their
content (container magic, then a real probe), within the size and duration limits. Messages name the request's own
path, never the server's folders.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from agentcvr.perception.media import PerceptionError, probe
from serve.errors import ApiError

SNIFF_BYTES = 64
# Containers we accept, by their magic: ISO-BMFF (mp4/mov/m4v), Matroska/WebM, AVI (RIFF....AVI ).
_MAGIC = ((4, b"ftyp"), (0, b"\x1a\x45\xdf\xa3"))


def mib(size: float) -> str:
    """A byte count in MiB as a limit message shows it: '0.5 MiB', '256 MiB'."""
    return f"{round(size / (1 << 20), 2):g} MiB"


def confined(root: Path, requested: str) -> Path:
    """`requested` resolved under `root`; `ApiError` 400 if it is absolute, climbs out, or a symlink leads out."""
    if "\x00" in requested:
        raise ApiError(
            400, "invalid_path", f"video path {requested!r} contains a NUL byte, which no file name can hold"
        )
    pure = PurePosixPath(requested.replace("\\", "/"))
    if not pure.parts:
        raise ApiError(404, "video_not_found", f"video path {requested!r} names no file")
    if pure.is_absolute() or requested.startswith("~") or ":" in pure.parts[0]:
        raise ApiError(400, "path_outside_media_root", f"video path {requested!r} must be relative to the media root")
    if ".." in pure.parts:
        raise ApiError(400, "path_outside_media_root", f"video path {requested!r} must not contain '..'")
    base = root.resolve()
    try:
        target = (base / pure).resolve()  # follows symlinks: a link that leads out ends outside `base`
        inside, exists = target.is_relative_to(base), target.is_file()
    except OSError:  # a name too long for the file system, a link loop...
        raise ApiError(400, "invalid_path", f"video path {requested[:80]!r} cannot name a file") from None
    if not inside:
        raise ApiError(400, "path_outside_media_root", f"video path {requested!r} leads outside the media root")
    if not exists:
        raise ApiError(404, "video_not_found", f"video {requested!r} is not a file under the media root")
    return target


def looks_like_video(head: bytes) -> bool:
    """Container magic in the first bytes of a file."""
    if head[:4] == b"RIFF":
        return head[8:12] == b"AVI "
    return any(head[offset : offset + len(magic)] == magic for offset, magic in _MAGIC)


def checked_video(path: Path, name: str, max_seconds: float, max_bytes: int) -> float:
    """Duration of the video at `path` after checking size, magic and a probe; `ApiError` naming `name` if not."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ApiError(
            413, "video_too_large", f"video {name!r} is {mib(size)}; the limit (max_upload_mb) is {mib(max_bytes)}"
        )
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if not looks_like_video(head):
        raise ApiError(415, "not_a_video", f"{name!r} is not a video file by its content (MP4, MOV, MKV, WebM, AVI)")
    try:
        info = probe(path)
    except (PerceptionError, OSError):
        raise ApiError(415, "not_a_video", f"{name!r} has no readable video stream") from None
    if info.duration > max_seconds:
        raise ApiError(
            413, "video_too_long", f"video {name!r} lasts {info.duration:.0f} s; the limit is {max_seconds:.0f} s"
        )
    return info.duration
