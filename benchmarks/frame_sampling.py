"""Frame sampling latency: 32 frames from a 60 s segment of a 640x360 H.264 file, cold and cached.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/frame_sampling.py [--repeats 7]

The test file is made here with ffmpeg (`testsrc2`, 120 s, 30 fps, x264 defaults: a keyframe at most every 250
frames, like typical downloaded video). Rows, each the median of `--repeats` runs:
- baseline: PyAV decoding every frame of the segment and keeping the 32 nearest the sample times (the naive way);
- decord cold: `FrameSampler.sample` with empty caches (decord seeks + `get_batch`, resize to long side 360);
- + JPEG/base64: the same plus encoding the 32 frames as data URLs for a VLM request;
- disk cache: a fresh sampler (a new process, in effect) reading the `.npz` the first one wrote;
- memory cache: the same sampler asked again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.perception.frames import FrameSampler, sample_times, to_data_url

START, END, FRAMES = 30.0, 90.0, 32


def make_video(path: Path) -> None:
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=640x360:rate=30:duration=120",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-pix_fmt",
            "yuv420p",
            "-threads",
            "1",
            str(path),
        ],
        check=True,
    )


def pyav_baseline(path: Path) -> int:
    """Decode the whole segment with PyAV, keep the frames nearest the sample times."""
    import av

    wanted = sample_times(START, END, FRAMES)
    kept, k = [], 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_count = 1
        container.seek(int(START / stream.time_base), stream=stream, backward=True)
        for frame in container.decode(stream):
            if frame.time is None or frame.time + 1 / 60 < wanted[k]:
                continue
            kept.append(frame.reformat(width=360, height=202, format="rgb24").to_ndarray())
            k += 1
            if k == len(wanted):
                break
    return len(kept)


def median_seconds(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "test_640x360.mp4"
        make_video(video)
        FrameSampler().sample(video, 0, 1, 1)  # warm the file cache and the fingerprint/probe memo
        baseline = median_seconds(lambda: pyav_baseline(video), args.repeats)
        cold = median_seconds(lambda: FrameSampler(cache_bytes=0).sample(video, START, END, FRAMES), args.repeats)

        def with_jpeg() -> None:
            frames = FrameSampler(cache_bytes=0).sample(video, START, END, FRAMES)
            [to_data_url(image) for image in frames.images]

        jpeg = median_seconds(with_jpeg, args.repeats)
        disk_dir = Path(tmp) / "cache"
        FrameSampler(cache_dir=disk_dir).sample(video, START, END, FRAMES)
        disk = median_seconds(lambda: FrameSampler(cache_dir=disk_dir).sample(video, START, END, FRAMES), args.repeats)
        sampler = FrameSampler()
        frames = sampler.sample(video, START, END, FRAMES)
        memory = median_seconds(lambda: sampler.sample(video, START, END, FRAMES), max(args.repeats, 50))
    table = Table(
        title=f"{FRAMES} frames from [{START:g}, {END:g}] s of a 640x360 30 fps H.264 file "
        f"-> {frames.images.shape[2]}x{frames.images.shape[1]} (median of {args.repeats})"
    )
    for column in ("method", "median ms", "x faster than baseline", "x faster than decord cold"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for label, seconds in [
        ("baseline: PyAV decode whole segment", baseline),
        ("decord cold", cold),
        ("decord cold + JPEG/base64 (VLM request)", jpeg),
        ("disk cache (.npz), new sampler", disk),
        ("memory cache, same sampler", memory),
    ]:
        table.add_row(label, f"{seconds * 1000:.2f}", f"{baseline / seconds:.1f}", f"{cold / seconds:.1f}")
    console = Console(width=150)
    console.print(table)
    speedups = f"memory {cold / memory:.0f}x, disk {cold / disk:.0f}x"
    console.print(f"target: cached repeat >= 10x faster than cold -> {speedups}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
