"""The production visual agent: a VLM (Qwen-VL served by vLLM, or any OpenAI-compatible server) looks at frames.

    vllm serve Qwen/Qwen2.5-VL-7B-Instruct --port 8001 --limit-mm-per-prompt '{"image": 128}'
    client = VLMClient(VLMConfig(base_url="http://localhost:8001/v1", model="Qwen/Qwen2.5-VL-7B-Instruct"))
    client.describe([(2, frames)], focus="what the cook adds to the pan")

One chat request per call: the system prompt of the official CrossVid harness, then one user message holding a
preamble that maps frame numbers to (video, time) — "Frames 1-16: video 2, 30.0 s to 60.0 s ..." — the frames as
JPEG `image_url` parts (long side 360 px, as sampled), and the focus prompt with the answer format. Several targets in
one call (the published protocol's side-by-side comparison) are numbered on continuously.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from agentcvr.perception.frames import Frames, to_data_url

SYSTEM = "You are a helpful video analyzer."  # the official CrossVid harness's system prompt
INSTRUCTION = (
    "Describe what happens in these frames{focus}. Report times in seconds of the video, one line per event, as "
    "'[start s - end s] description'. Describe only what is visible. If nothing notable happens, reply exactly "
    "'No significant action observed.'"
)

Target = tuple[int, Frames]  # (1-based video index, the frames sampled from it)


class VLMConfig(BaseModel):
    """An OpenAI-compatible vision-language model endpoint."""

    base_url: str = Field(description="e.g. http://localhost:8001/v1 (vLLM's OpenAI server).")
    model: str = Field(description="The served model name, e.g. Qwen/Qwen2.5-VL-7B-Instruct.")
    api_key: str = Field(default="EMPTY", description="Bearer token; vLLM accepts anything unless --api-key is set.")
    max_tokens: int = Field(default=512, ge=1, description="Tokens per description.")
    temperature: float = Field(default=0.0, ge=0, description="Paper: 0 at inference.")
    timeout: float = Field(default=120.0, gt=0, description="Seconds per HTTP request.")
    max_retries: int = Field(default=1, ge=0, description="Retries on connection errors and 5xx.")
    jpeg_quality: int = Field(default=90, ge=10, le=100, description="JPEG quality of the frames sent.")


def preamble(targets: Sequence[Target]) -> str:
    """Which frame numbers come from which video and when.

    Frame numbers run on across targets; each line gives the interval and every frame's time."""
    total = sum(len(frames) for _, frames in targets)
    lines = [f"You are given {total} frames sampled uniformly from {len(targets)} video interval(s), in order:"]
    number = 1
    for video, frames in targets:
        last = number + len(frames) - 1
        times = ", ".join(f"{t:.1f}" for t in frames.times)
        span = f"Frame {number}" if last == number else f"Frames {number}-{last}"
        lines.append(f"- {span}: video {video}, {frames.start:.1f} s to {frames.end:.1f} s (frame times: {times} s).")
        number = last + 1
    return "\n".join(lines)


def build_messages(targets: Sequence[Target], focus: str = "", jpeg_quality: int = 90) -> list[dict]:
    """The chat messages of one visual-agent request."""
    content: list[dict] = [{"type": "text", "text": preamble(targets)}]
    for _, frames in targets:
        for image in frames.images:
            content.append({"type": "image_url", "image_url": {"url": to_data_url(image, jpeg_quality)}})
    focus_clause = f", focusing on: {focus.strip()}" if focus.strip() else ""
    content.append({"type": "text", "text": INSTRUCTION.format(focus=focus_clause)})
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


class VLMClient:
    """Sends frames to an OpenAI-compatible chat endpoint and returns the model's description."""

    def __init__(self, config: VLMConfig):
        from openai import OpenAI

        self.config = config
        self.client = OpenAI(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout, max_retries=config.max_retries
        )

    def describe(self, targets: Sequence[Target], focus: str = "") -> str:
        messages = build_messages(targets, focus, self.config.jpeg_quality)
        response = self.client.chat.completions.create(
            model=self.config.model,
            messages=messages,  # type: ignore[arg-type]
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
        )
        text = (response.choices[0].message.content or "").strip() if response.choices else ""
        if not text:
            raise RuntimeError(f"the VLM at {self.config.base_url} returned an empty description")
        return text
