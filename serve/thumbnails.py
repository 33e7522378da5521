"""Thumbnails of the frames the visual agent saw in an observe step, for the trace viewer.

The frames are sampled again with the perception's own sampler and the same arguments (count, clip, size), so they
come from its frame cache: the very frames the describer or VLM was given. Only `RealPerception` has files to show.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from agentcvr.episode import Episode

log = logging.getLogger("agentcvr.serve")
THUMB_SIDE = 192  # px, long side


def observed_frames(perception: Any, episode: Episode, arguments: dict, limit: int) -> list[tuple[float, bytes]]:
    """Up to `limit` (time s, JPEG) thumbnails spread over the step's frames; [] if there are none to show."""
    sampler, config = getattr(perception, "sampler", None), getattr(perception, "config", None)
    if sampler is None or config is None:
        return []
    try:
        from PIL import Image

        from agentcvr.perception.media import probe

        ref = episode.video(int(arguments["video"]))
        path = perception.resolve(ref)
        count = min(int(arguments.get("num_frames", 16)), config.max_frames)
        if config.visual == "vlm":
            side = config.long_side
        else:
            info = probe(path)
            side = min(config.describer_long_side, max(info.width, info.height))
        frames = sampler.sample(path, float(arguments["start"]), float(arguments["end"]), count, ref.offset, side)
        shown = min(limit, len(frames))  # spread over the whole interval: first and last frames included
        picks = sorted({round(i * (len(frames) - 1) / max(1, shown - 1)) for i in range(shown)})
        thumbs = []
        for i in picks:
            image = Image.fromarray(frames.images[i])
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=80)
            thumbs.append((float(frames.times[i]), buffer.getvalue()))
        return thumbs
    except Exception as error:  # a thumbnail is a nicety: the run goes on without it
        log.warning("no thumbnails for an observe step: %s", type(error).__name__)
        return []
