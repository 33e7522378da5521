"""Frame sampling with decord: N frames uniformly in an interval of a video, resized, cached.

    frames = FrameSampler().sample("cook.mp4", start=10, end=70, num_frames=32)
    frames.images.shape   # (32, 202, 360, 3) uint8 RGB, long side 360 px
    frames.times          # seconds in the clip's own time, one per frame

Frame i sits at the centre of the i-th of N equal slices of [start, end] (never on the interval's edges), at
`offset + t` in the file for a clip that starts at `offset`. Decoded results are cached by (file content
fingerprint, interval in the file, N, size): in memory (LRU bounded in bytes) and optionally on disk (`.npz`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcvr.perception.folder import decode_folder, is_frame_folder
from agentcvr.perception.media import VideoUnreadable, file_interval, fingerprint, probe

LONG_SIDE = 360  # the paper's visual-agent setting


@dataclass(frozen=True)
class Frames:
    """Sampled frames of one interval: `images` (N, H, W, 3) uint8 RGB, `times` in the clip's seconds."""

    images: Any  # numpy.ndarray
    times: tuple[float, ...]
    start: float
    end: float
    path: str

    def __len__(self) -> int:
        return len(self.times)

    @property
    def nbytes(self) -> int:
        return int(self.images.nbytes)


def sample_times(start: float, end: float, num_frames: int) -> list[float]:
    """Centres of `num_frames` equal slices of [start, end].

    >>> sample_times(0, 10, 2)
    [2.5, 7.5]
    """
    step = (end - start) / num_frames
    return [start + (i + 0.5) * step for i in range(num_frames)]


def target_size(width: int, height: int, long_side: int | None) -> tuple[int, int]:
    """(width, height) with the long side at `long_side` px, aspect kept, even numbers; native size for None.

    >>> target_size(640, 360, 360)
    (360, 202)
    >>> target_size(360, 640, 360)
    (202, 360)
    """
    if not long_side:
        return width, height
    scale = long_side / max(width, height)
    even = lambda x: max(2, int(round(x * scale / 2)) * 2)  # noqa: E731
    return (long_side, even(height)) if width >= height else (even(width), long_side)


class FrameSampler:
    """Samples frames with decord, with a byte-bounded LRU in memory and an optional disk cache."""

    def __init__(self, cache_bytes: int = 512 << 20, cache_dir: str | Path | None = None, decode_threads: int = 1):
        self.cache_bytes = cache_bytes
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.decode_threads = decode_threads
        self._memory: OrderedDict[tuple, Frames] = OrderedDict()
        self._used = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def sample(
        self,
        path: str | os.PathLike,
        start: float,
        end: float,
        num_frames: int = 16,
        offset: float = 0.0,
        long_side: int | None = LONG_SIDE,
    ) -> Frames:
        """Frames of [start, end] (clip seconds) of the clip at `offset` in `path`; raises `PerceptionError`s."""
        if num_frames < 1:
            raise ValueError(f"num_frames must be at least 1, got {num_frames}")
        info = probe(path)
        begin, finish = file_interval(info.duration, offset, start, end, str(path))
        key = (fingerprint(path), round(begin, 3), round(finish, 3), num_frames, long_side)
        cached = self._get(key, path)  # cached in file time: clips of one file share entries
        if cached is None:
            self.misses += 1
            width, height = target_size(info.width, info.height, long_side)
            images, file_times = _decode(str(path), begin, finish, num_frames, width, height, self.decode_threads)
            cached = Frames(images, tuple(round(t, 3) for t in file_times), begin, finish, str(path))
            self._put(key, cached)
        if not offset:
            return cached
        return Frames(cached.images, tuple(round(t - offset, 3) for t in cached.times), start, end, str(path))

    def _get(self, key: tuple, path: str | os.PathLike) -> Frames | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.hits += 1
                return self._memory[key]
        if self.cache_dir is None:
            return None
        file = self._disk_path(key)
        if not file.is_file():
            return None
        import numpy as np

        try:
            with np.load(file) as data:
                frames = Frames(
                    data["images"], tuple(data["times"].tolist()), float(data["start"]), float(data["end"]), str(path)
                )
        except (OSError, ValueError, KeyError):
            file.unlink(missing_ok=True)  # a damaged cache entry is decoded again
            return None
        self.hits += 1
        self._remember(key, frames)
        return frames

    def _put(self, key: tuple, frames: Frames) -> None:
        self._remember(key, frames)
        if self.cache_dir is not None:
            import numpy as np

            self.cache_dir.mkdir(parents=True, exist_ok=True)
            file = self._disk_path(key)
            partial = file.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp.npz")
            np.savez(partial, images=frames.images, times=np.asarray(frames.times), start=frames.start, end=frames.end)
            partial.replace(file)

    def _remember(self, key: tuple, frames: Frames) -> None:
        with self._lock:
            if key in self._memory or frames.nbytes > self.cache_bytes:
                return
            self._memory[key] = frames
            self._used += frames.nbytes
            while self._used > self.cache_bytes:
                _, old = self._memory.popitem(last=False)
                self._used -= old.nbytes

    def _disk_path(self, key: tuple) -> Path:
        assert self.cache_dir is not None
        return self.cache_dir / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".npz")


_import_lock = threading.Lock()


def load_decord():
    """The decord module, its native library loaded with RTLD_LOCAL.

    decord loads `libdecord.so` with RTLD_GLOBAL, which exports the libstdc++ linked into it to every library loaded
    afterwards; llama.cpp (`xllamacpp`, the embedded GGUF master) then binds to that copy and crashes. decord only
    calls its library through its own handle, so a local load loses nothing."""
    import sys

    if "decord" in sys.modules:
        return sys.modules["decord"]
    import ctypes

    with _import_lock:
        saved = ctypes.RTLD_GLOBAL
        ctypes.RTLD_GLOBAL = ctypes.RTLD_LOCAL  # read by decord/_ffi/base.py at import time
        try:
            import decord
        finally:
            ctypes.RTLD_GLOBAL = saved
    return decord


def _decode(
    path: str, begin: float, finish: float, num_frames: int, width: int, height: int, threads: int
) -> tuple[Any, list[float]]:
    """Decode the frames nearest to the sample times in [begin, finish] (file seconds)."""
    if is_frame_folder(path):
        return decode_folder(path, sample_times(begin, finish, num_frames), width, height)
    decord = load_decord()

    try:
        reader = decord.VideoReader(path, ctx=decord.cpu(0), width=width, height=height, num_threads=threads)
        fps = float(reader.get_avg_fps())
        count = len(reader)
        indices = [min(count - 1, max(0, int(t * fps + 1e-6))) for t in sample_times(begin, finish, num_frames)]
        images = reader.get_batch(indices).asnumpy()
    except decord.DECORDError as error:
        raise VideoUnreadable(f"{path}: decord could not decode frames: {str(error).splitlines()[0]}") from error
    return images, [i / fps for i in indices]


def to_jpeg(image: Any, quality: int = 90) -> bytes:
    """One RGB frame (H, W, 3) as JPEG bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def to_data_url(image: Any, quality: int = 90) -> str:
    """One RGB frame as a `data:image/jpeg;base64,...` URL, the form OpenAI-compatible VLMs accept."""
    return "data:image/jpeg;base64," + base64.b64encode(to_jpeg(image, quality)).decode("ascii")
