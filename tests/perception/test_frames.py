"""Frame sampling with decord on real rendered files: placement, size, clip offsets, caches and clear errors."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from agentcvr.perception.frames import FrameSampler, sample_times, target_size, to_data_url
from agentcvr.perception.media import (
    IntervalOutsideVideo,
    VideoNotFound,
    VideoUnreadable,
    file_interval,
    fingerprint,
    probe,
)

pytestmark = pytest.mark.slow  # renders its videos with ffmpeg first, ~7 s


def test_probe_reads_the_rendered_stream_facts(video, silent_video):
    info = probe(video)
    assert info.duration == pytest.approx(40.0, abs=0.11)  # exact frame count at 10 fps
    assert (info.width, info.height, info.fps) == (640, 360, 10.0)
    assert info.has_audio and info.audio_duration == pytest.approx(40.0, abs=0.1)
    assert not probe(silent_video).has_audio


def test_frames_are_uniform_in_the_interval_with_long_side_360(video):
    frames = FrameSampler().sample(video, 8.0, 16.0, num_frames=8)
    assert frames.images.shape == (8, 202, 360, 3) and frames.images.dtype == np.uint8
    # frame i shows the video at the centre of the i-th of 8 one-second slices (10 fps: exact to 0.1 s)
    assert frames.times == pytest.approx(sample_times(8, 16, 8), abs=0.1)
    assert all(8 <= t < 16 for t in frames.times)


def test_native_size_when_no_long_side_is_asked(video):
    frames = FrameSampler().sample(video, 0, 40, num_frames=2, long_side=None)
    assert frames.images.shape[1:] == (360, 640, 3)


def test_a_clip_offset_shifts_sampling_into_the_source_file(rendered):
    _, episode, _ = rendered
    clip = episode.videos[3]  # video 4: the clip of "film" that starts 25 s into the file
    assert clip.offset == 25 and clip.path == episode.videos[2].path
    sampler = FrameSampler()
    in_clip = sampler.sample(clip.path, 3.0, 10.0, num_frames=4, offset=clip.offset)
    in_file = sampler.sample(clip.path, 28.0, 35.0, num_frames=4)
    assert in_clip.times == pytest.approx([t - 25 for t in in_file.times])
    assert np.array_equal(in_clip.images, in_file.images)


def test_repeats_come_from_memory_and_from_disk(video, tmp_path):
    sampler = FrameSampler(cache_dir=tmp_path)
    first = sampler.sample(video, 0, 30, 16)
    assert sampler.sample(video, 0, 30, 16) is first and sampler.hits == 1
    other = FrameSampler(cache_dir=tmp_path)  # a new process, in effect
    again = other.sample(video, 0, 30, 16)
    assert other.hits == 1 and other.misses == 0
    assert np.array_equal(again.images, first.images) and again.times == first.times


def test_the_memory_cache_is_bounded_in_bytes(video):
    one = FrameSampler().sample(video, 0, 10, 4).nbytes
    sampler = FrameSampler(cache_bytes=int(one * 1.5))
    sampler.sample(video, 0, 10, 4)
    sampler.sample(video, 10, 20, 4)  # evicts the first
    sampler.sample(video, 0, 10, 4)
    assert sampler.misses == 3 and sampler.hits == 0


def test_frames_become_jpeg_data_urls(video):
    frames = FrameSampler().sample(video, 5, 12, 2)
    url = to_data_url(frames.images[0])
    assert url.startswith("data:image/jpeg;base64,")
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert image.format == "JPEG" and image.size == (360, 202)


def test_fingerprint_follows_content_not_name(video, tmp_path):
    copy = tmp_path / "copy.mp4"
    copy.write_bytes(video.read_bytes())
    assert fingerprint(copy) == fingerprint(video)
    copy.write_bytes(video.read_bytes()[:-10])
    assert fingerprint(copy) != fingerprint(video)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(VideoNotFound, match="nope.mp4"):
        FrameSampler().sample(tmp_path / "nope.mp4", 0, 1)


def test_corrupt_and_non_video_files_are_unreadable(corrupt_video, tmp_path):
    with pytest.raises(VideoUnreadable, match="corrupt.mp4"):
        FrameSampler().sample(corrupt_video, 0, 1)
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all")
    with pytest.raises(VideoUnreadable):
        FrameSampler().sample(text, 0, 1)


@pytest.mark.parametrize(
    ("start", "end", "offset"),
    [
        (41, 45, 0),  # starts after the end
        (30, 45, 0),  # runs 5 s past the end (1 s of slack allowed)
        (10, 20, 25),  # a clip offset that pushes the interval past the end
    ],
)
def test_intervals_outside_the_video_are_refused(video, start, end, offset):
    with pytest.raises(IntervalOutsideVideo, match="outside"):
        FrameSampler().sample(video, start, end, 4, offset=offset)


def test_an_end_within_a_second_of_the_end_is_clamped():
    assert file_interval(40.0, 0.0, 30.0, 40.6) == (30.0, 40.0)
    with pytest.raises(IntervalOutsideVideo):
        file_interval(40.0, 0.0, 5.0, 5.0)


def test_target_size_keeps_the_aspect_ratio():
    assert target_size(1920, 1080, 360) == (360, 202)
    assert target_size(1080, 1920, 360) == (202, 360)
    assert target_size(640, 480, None) == (640, 480)


def test_decord_is_loaded_without_exporting_its_symbols():
    """A plain `import decord` exports its statically linked libstdc++ to every later library (llama.cpp crashed)."""
    import subprocess
    import sys

    probe_symbol = "import ctypes; print(hasattr(ctypes.CDLL(None), 'DECORDFuncCall'))"
    ours = "from agentcvr.perception.frames import load_decord; load_decord(); " + probe_symbol
    plain = "import decord; " + probe_symbol
    run = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for code in (ours, plain)
    ]
    assert [r.stdout.strip() for r in run] == ["False", "True"]
