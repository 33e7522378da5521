"""Single-pass mode: the official CrossVid evaluation against an OpenAI-compatible VLM.

128 frames per item split as the official scripts split them (128 // n per video for BU/NC/CC, 42 per PEA clip,
128 by duration for PI and PSS, 64 + 64 for FSA/CCQA/MSR/MOC), long side 360, JPEG `image_url` parts interleaved at
the prompt's `<frame>` marks, system "You are a helpful video analyzer.", temperature 0, top_p 0.95, max_tokens 8192.
The raw `content` is the prediction. Decoding runs in worker threads; decoded frames come from a `FrameCache`.

    predictor = SinglePassPredictor("http://gpu:8000/v1", "Qwen/Qwen3-VL-8B-Instruct", cache_dir=Path("~/.cache/f"))
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from eval.crossvid import prompts
from eval.crossvid.frames import FrameCache
from eval.crossvid.loader import CrossVidItem
from eval.runner import Reply


class FrameCountMismatch(ValueError):
    """Fewer frames than the prompt's fixed marks (a short FSA/CCQA/UAV video): the official request fails too."""


def build_request(item: CrossVidItem, cache: FrameCache, total: int = 128) -> tuple[str, list[str]]:
    """(prompt with `<frame>` marks, base64 JPEG frames in mark order) for one item, built as the official scripts."""
    raw, task = item.raw, item.task
    videos = [str(p) for p in item.media]
    if task in ("BU", "NC", "CC"):
        per = total // len(raw["videos"])
        frames, marks = [], ""
        for index, path in enumerate(videos):
            got = cache.get("whole", path, per).groups[0]
            frames += got
            marks += f"Video {index + 1}:\n" + prompts.frame_marks(len(got))
        text = prompts.MULTI_VIDEO[task].format(
            QUESTION=raw["question"], OPTIONS="\n".join(raw["options"]), FRAMES=marks
        )
        return text, frames
    if task == "PEA":
        per = total // len(raw["videos"])
        frames, marks = [], ""
        for index, path in enumerate(videos):
            clip = [[[int(raw["begin"][index]), int(raw["end"][index])]]]
            got = cache.get("intervals", path, per, clip).groups[0]
            frames += got
            marks += f"Video {index + 1}:\n" + prompts.frame_marks(len(got))
        text = prompts.MULTI_VIDEO["PEA"].format(
            QUESTION=raw["question"], OPTIONS="\n".join(raw["options"]), FRAMES=marks
        )
        return text, frames
    if task == "PI":
        groups = cache.get("intervals", videos[0], total, [raw["beginning"], raw["ending"]]).groups
        marks = "Beginning:\n" + prompts.frame_marks(len(groups[0])) + "Ending:\n" + prompts.frame_marks(len(groups[1]))
        return prompts.PI.format(OPTIONS="\n".join(raw["options"]), FRAMES=marks), groups[0] + groups[1]
    if task == "PSS":
        segments = list(raw["segments"].values())
        groups = cache.get("intervals", videos[0], total, segments).groups
        marks = "".join(f"Segment {i + 1}:\n" + prompts.frame_marks(len(g)) for i, g in enumerate(groups))
        return prompts.PSS.format(N=len(groups), FRAMES=marks), [f for g in groups for f in g]
    half = total // 2
    fixed = "\n" + prompts.frame_marks(half)
    if task in ("MSR", "MOC"):
        folders = [str(item.media[0]), str(item.media[2])]  # media: frames A, boxes A, frames B, boxes B
        frames = [f for folder in folders for f in cache.get("folder", folder, half).groups[0]]
        episode = item.episode
        assert episode is not None
        marks = "View A:" + fixed + "\nView B:" + fixed
        text = prompts.UAV.format(
            QUESTION=episode.question,
            OPTIONS="\n".join(episode.options),
            BBOX="\n".join(episode.context.get("objects", [])),
            FRAMES=marks,
        )
        return text, _exactly(frames, total - total % 2)
    sampled = [cache.get("whole", path, half) for path in videos]
    frames = [f for s in sampled for f in s.groups[0]]
    if task == "FSA":
        begin, end = raw["ref_segment"]
        times = [list(map(int, s.times[0])) for s in sampled]
        marks = "Video 1:" + fixed + "\nVideo 2:" + fixed
        text = prompts.FSA.format(BEGIN=begin, END=end, TIME1=times[0], TIME2=times[1], FRAMES=marks)
        return text, _exactly(frames, 2 * half)
    marks = "Video A:" + fixed + "\nVideo B:" + fixed
    return prompts.CCQA.format(QUESTION=raw["question"], FRAMES=marks), _exactly(frames, 2 * half)


def _exactly(frames: list[str], marks: int) -> list[str]:
    """The official scripts index frames by mark: fewer frames than marks makes the request fail."""
    if len(frames) < marks:
        raise FrameCountMismatch(
            f"{len(frames)} frames for {marks} fixed <frame> marks (a video shorter than the marks)"
        )
    return frames


def content_parts(prompt: str, frames: list[str]) -> list[dict]:
    """Text and `image_url` parts interleaved at the `<frame>` marks; empty text pieces are left out."""
    parts: list[dict] = []
    pieces = prompt.split("<frame>")
    for index, piece in enumerate(pieces):
        if piece:
            parts.append({"type": "text", "text": piece})
        if index < len(pieces) - 1:
            parts.append({"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{frames[index]}"}})
    return parts


class SinglePassPredictor:
    """One chat completion per item; HTTP errors raise (the runner retries), `content: null` is a None output."""

    def __init__(
        self,
        base_url: str,
        model: str,
        frames: int = 128,
        cache_dir: Path | None = None,
        decode_workers: int = 4,
        api_key: str = "EMPTY",
        timeout: float = 600.0,
    ):
        self.url, self.model, self.frames = base_url.rstrip("/") + "/chat/completions", model, frames
        self.cache = FrameCache(cache_dir)
        self._pool = ThreadPoolExecutor(decode_workers, thread_name_prefix="frames")
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        self._client = httpx.AsyncClient(timeout=timeout, limits=limits, headers={"Authorization": f"Bearer {api_key}"})

    async def predict(self, item: CrossVidItem) -> Reply:
        loop = asyncio.get_running_loop()
        prompt, frames = await loop.run_in_executor(self._pool, build_request, item, self.cache, self.frames)
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": prompts.SYSTEM},
                {"role": "user", "content": content_parts(prompt, frames)},
            ],
            "stream": False,
            "max_tokens": 8192,
            "temperature": 0.0,
            "top_p": 0.95,
        }
        response = await self._client.post(self.url, json=body)
        response.raise_for_status()
        return Reply(output=response.json()["choices"][0]["message"].get("content"))

    async def aclose(self) -> None:
        await self._client.aclose()
        self._pool.shutdown(wait=False, cancel_futures=True)
