"""`RealPerception`: observe/listen answered from video files, for the same agent loop the simulator serves.

    perception = RealPerception(video_root="out/")                          # CPU describer + Whisper tiny.en
    perception = RealPerception(visual="vlm", vlm={"base_url": "http://gpu:8001/v1", "model": "Qwen/Qwen2.5-VL-7B"},
                                audio={"model": "large-v3", "device": "cuda", "compute_type": "float16"})
    Agent(policy, perception).run(episode)                                 # episode.videos[i].path / offset

Each call runs in a worker pool (visual and audio pools apart, so a long transcription never blocks frame work) and
waits at most its timeout; a call past it raises `PerceptionTimeout` (its worker finishes in the background and its
result is cached). Every error is a `PerceptionError` with a message for the master agent; the loop records it in
the trace. Observations are cached by (file fingerprint, clip interval, frames, focus, visual backend).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcvr import cancel
from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode, VideoRef
from agentcvr.perception.audio import AudioAgent, AudioConfig
from agentcvr.perception.describer import DescriberConfig, FrameDescriber
from agentcvr.perception.frames import LONG_SIDE, FrameSampler
from agentcvr.perception.media import (
    END_TOLERANCE,
    IntervalOutsideVideo,
    PerceptionError,
    PerceptionTimeout,
    VideoNotFound,
    fingerprint,
    probe,
)
from agentcvr.perception.vlm import VLMClient, VLMConfig


class RealPerceptionConfig(BaseModel):
    """Real perception: which visual agent, the audio agent, pools, timeouts and caches."""

    visual: Literal["describer", "vlm"] = Field(default="describer", description="CPU describer or a VLM endpoint.")
    vlm: VLMConfig | None = Field(default=None, description="The VLM endpoint, when visual is 'vlm'.")
    describer: DescriberConfig = Field(default_factory=DescriberConfig)
    audio: AudioConfig = Field(default_factory=AudioConfig)
    video_root: str | None = Field(default=None, description="Folder that relative video paths are resolved in.")
    long_side: int = Field(default=LONG_SIDE, ge=32, description="Long side of frames sent to the VLM, px.")
    describer_long_side: int = Field(default=720, ge=32, description="Largest long side the describer reads, px.")
    max_frames: int = Field(default=128, ge=1, description="Frames per call at most (the paper's stated cap).")
    observe_timeout: float = Field(default=120.0, gt=0, description="Seconds one observe may take.")
    listen_timeout: float = Field(default=120.0, gt=0, description="Seconds one listen may take.")
    visual_workers: int = Field(default=2, ge=1, description="Observe calls decoded/described at once.")
    audio_workers: int = Field(default=1, ge=1, description="Listen calls transcribed at once.")
    frame_cache_mb: int = Field(default=512, ge=0, description="Decoded frames kept in memory, MiB.")
    frame_cache_dir: str | None = Field(default=None, description="Also keep decoded frames on disk here.")
    cache_size: int = Field(default=1024, ge=0, description="Observations kept in memory.")
    call_records: int = Field(default=10_000, ge=1, description="Latest calls kept for latency and error stats.")


@dataclass
class CallRecord:
    """One perception call: what, how long, and the error if any."""

    tool: str
    episode: str
    video: int
    start: float
    end: float
    seconds: float
    error: str | None = None


class RealPerception:
    """`Perception` over real files (see the module docstring). Use as a context manager or call `close()`."""

    def __init__(self, config: RealPerceptionConfig | None = None, **options: Any):
        self.config = config or RealPerceptionConfig(**options)
        if config is not None and options:
            self.config = config.model_copy(update=options)
        c = self.config
        if c.visual == "vlm" and c.vlm is None:
            raise ValueError("visual='vlm' needs vlm={'base_url': ..., 'model': ...}")
        self.sampler = FrameSampler(cache_bytes=c.frame_cache_mb << 20, cache_dir=c.frame_cache_dir)
        self.audio = AudioAgent(c.audio.model_copy(update={"workers": c.audio_workers}))
        self._describer: FrameDescriber | None = None
        self._vlm: VLMClient | None = None
        self._visual_pool = ThreadPoolExecutor(c.visual_workers, thread_name_prefix="observe")
        self._audio_pool = ThreadPoolExecutor(c.audio_workers, thread_name_prefix="listen")
        self._cache: OrderedDict[tuple, str] = OrderedDict()
        self._lock = threading.Lock()
        self.calls: deque[CallRecord] = deque(maxlen=c.call_records)  # the latest calls, for latency and error stats

    # --- the Perception interface ------------------------------------------------------------------------------
    def observe(self, episode: Episode, action: Observe) -> str:
        ref = self._video(episode, action.video, action.end)
        return self._call(
            "observe",
            episode,
            action,
            self._visual_pool,
            self.config.observe_timeout,
            lambda: self._observe(ref, action),
        )

    def listen(self, episode: Episode, action: Listen) -> str:
        ref = self._video(episode, action.video, action.end)
        return self._call(
            "listen",
            episode,
            action,
            self._audio_pool,
            self.config.listen_timeout,
            lambda: self.audio.listen(self.resolve(ref), action.start, action.end, ref.offset),
        )

    # --- work ---------------------------------------------------------------------------------------------------
    def _observe(self, ref: VideoRef, action: Observe) -> str:
        c = self.config
        path = self.resolve(ref)
        count = min(action.num_frames, c.max_frames)
        key = (fingerprint(path), ref.offset, action.start, action.end, count, action.focus, c.visual)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        if c.visual == "vlm":
            frames = self.sampler.sample(path, action.start, action.end, count, ref.offset, c.long_side)
            text = self.vlm.describe([(action.video, frames)], action.focus)
        else:
            info = probe(path)
            side = min(c.describer_long_side, max(info.width, info.height))
            frames = self.sampler.sample(path, action.start, action.end, count, ref.offset, side)
            text = self.describer.describe(frames, action.focus, _frame_probe(str(path), ref.offset), 1 / info.fps)
        with self._lock:
            self._cache[key] = text
            while len(self._cache) > c.cache_size:
                self._cache.popitem(last=False)
        return text

    def _call(
        self,
        tool: str,
        episode: Episode,
        action: Observe | Listen,
        pool: ThreadPoolExecutor,
        timeout: float,
        work: Callable[[], str],
    ) -> str:
        started = time.perf_counter()
        record = CallRecord(tool, episode.id, action.video, action.start, action.end, 0.0)
        try:
            future = pool.submit(cancel.bound(work))  # the run's cancel token goes along
            try:
                return cancel.wait(future, timeout)  # a stopped run does not wait for its perception
            except FutureTimeout:
                raise PerceptionTimeout(
                    f"{tool} on video {action.video} [{action.start:g}-{action.end:g} s] took longer than {timeout:g} s"
                ) from None
        except Exception as error:
            record.error = f"{type(error).__name__}: {error}"
            raise
        finally:
            record.seconds = time.perf_counter() - started
            with self._lock:
                self.calls.append(record)

    # --- helpers ------------------------------------------------------------------------------------------------
    def resolve(self, ref: VideoRef) -> Path:
        """The file of a video: its `path` (relative ones under `video_root`), else `video_root/name`."""
        root = Path(self.config.video_root) if self.config.video_root else None
        raw = ref.path or ref.name
        if not raw:
            raise VideoNotFound(f"video {ref.index} has no file (set its path, or a name under video_root)")
        path = Path(raw).expanduser()
        if not path.is_absolute() and root is not None:
            path = root / path
        if not path.is_file() and not path.is_dir():  # a folder of frames reads as a video
            raise VideoNotFound(f"video {ref.index}: file not found: {path}")
        return path

    def _video(self, episode: Episode, index: int, end: float) -> VideoRef:
        try:
            ref = episode.video(index)
        except KeyError as error:
            raise IntervalOutsideVideo(str(error.args[0])) from None
        if end > ref.duration + END_TOLERANCE:
            raise IntervalOutsideVideo(f"video {index} lasts {ref.duration:g} s; {end:g} s is past its end")
        return ref

    @property
    def describer(self) -> FrameDescriber:
        with self._lock:
            if self._describer is None:
                self._describer = FrameDescriber(self.config.describer)
            return self._describer

    @property
    def vlm(self) -> VLMClient:
        with self._lock:
            if self._vlm is None:
                assert self.config.vlm is not None
                self._vlm = VLMClient(self.config.vlm)
            return self._vlm

    def close(self) -> None:
        self._visual_pool.shutdown(wait=False, cancel_futures=True)
        self._audio_pool.shutdown(wait=False, cancel_futures=True)
        if self._describer is not None:
            self._describer.close()

    def __enter__(self) -> RealPerception:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MANIFEST = "manifest.jsonl"  # written by scripts_gen.render: {"id", "videos": [{"index", "path", "offset", ...}]}


def read_manifest(folder: str | Path) -> dict[str, dict]:
    """The rendered-videos manifest of a folder, by episode id (paths in it are relative to the folder)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no {MANIFEST} in {folder}: render the scripts there first (agentcvr render)")
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {entry["id"]: entry for entry in entries}


def attach_videos(episodes: list[Episode], folder: str | Path) -> list[Episode]:
    """Copies of the episodes whose videos point at the rendered files (absolute paths, clip offsets) of `folder`;
    every episode must have been rendered there."""
    root = Path(folder).resolve()
    manifest = read_manifest(root)
    missing = [e.id for e in episodes if e.id not in manifest]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise FileNotFoundError(f"{len(missing)} episode(s) not rendered in {root}: {shown} (agentcvr render)")
    attached = []
    for episode in episodes:
        copy = episode.model_copy(deep=True)
        files = {video["index"]: video for video in manifest[episode.id]["videos"]}
        for ref in copy.videos:
            if ref.index not in files:
                raise FileNotFoundError(f"episode {episode.id}: video {ref.index} is not in {root / MANIFEST}")
            ref.path, ref.offset = str(root / files[ref.index]["path"]), float(files[ref.index]["offset"])
        attached.append(copy)
    return attached


def _frame_probe(path: str, offset: float) -> Callable[[float], tuple[Any, float]]:
    """Decode single small frames of one file by clip time (for placing scene cuts); one reader per call."""
    from agentcvr.perception.folder import decode_folder, is_frame_folder
    from agentcvr.perception.frames import load_decord, target_size

    info = probe(path)
    if is_frame_folder(path):

        def folder_frame_at(t: float) -> tuple[Any, float]:
            width, height = target_size(info.width, info.height, 160)
            images, times = decode_folder(path, [offset + t], width, height)
            return images[0], times[0] - offset

        return folder_frame_at
    decord = load_decord()
    reader = None

    def frame_at(t: float) -> tuple[Any, float]:
        nonlocal reader
        if reader is None:
            width, height = target_size(info.width, info.height, 160)
            reader = decord.VideoReader(path, ctx=decord.cpu(0), width=width, height=height, num_threads=1)
        index = min(len(reader) - 1, max(0, int((offset + t) * info.fps + 1e-6)))
        return reader[index].asnumpy(), index / info.fps - offset

    return frame_at


__all__ = ["CallRecord", "PerceptionError", "RealPerception", "RealPerceptionConfig", "attach_videos", "read_manifest"]
