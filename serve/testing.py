"""A real server in its own process (`uvicorn --factory serve.app:create_app`) over two rendered videos, with a stub
master behind the OpenAI test double (`agentcvr.openai_stub`): for the serve benchmarks (load, soak, cancellation)
and the tests that need a server of their own.

    media = rendered_media(work)                                  # work/media/cat.mp4, dog.mp4
    with OpenAIStub() as stub, server_process(work, media, policy="openai:stub", policy_url=stub.base_url) as (url, _):
        stub.always(master)
        httpx.post(f"{url}/answer", json=...)

The stub master plays a short, sensible episode: observe video 2, listen to it, answer B (questions with 'slow' in
them make every turn take 0.4 s and never answer, for cancellation and queue tests; 'glacial' ones a minute).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from scripts_gen.known_facts import render_facts

ROOT = Path(__file__).resolve().parents[1]


def tool_call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def master(request: dict) -> str:
    """The stub master's next turn, from the conversation so far."""
    messages = request["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    done = sum(m["role"] == "assistant" for m in messages)
    if "glacial" in question:  # a master that would take a minute: only a run that is stopped mid-call ends early
        time.sleep(60)
    if "slow" in question:
        time.sleep(0.4)
        return tool_call("observe", video=1, start=0, end=10, focus="", num_frames=2)
    if done == 0:
        # the focus carries the question's tag (if any), so distinct load-test runs are not served from one cache entry
        tag = " ".join(re.findall(r"#\d+", question))
        return tool_call("observe", video=2, start=5, end=12, focus=f"what animal is there {tag}".strip(), num_frames=4)
    if done == 1:
        return tool_call("listen", video=2, start=5, end=12)
    return tool_call("answer", answer="B")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rendered_media(work: Path) -> Path:
    """A media root under `work` holding the rendered cat (30 s) and dog (40 s) videos."""
    _, episode, _ = render_facts(work)
    media = work / "media"
    media.mkdir(exist_ok=True)
    for name, ref in zip(("cat.mp4", "dog.mp4"), episode.videos[:2], strict=True):
        (media / name).write_bytes(Path(ref.path).read_bytes())
    return media


def wait_ready(url: str, limit: float = 300) -> None:
    """Poll `/readyz` until the server's models are loaded."""
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server did not get ready in {limit:.0f} s")


@contextmanager
def server_process(work: Path, media: Path, **settings: Any) -> Iterator[tuple[str, subprocess.Popen]]:
    """A ready server on a free port, its traces and uploads under `work`, `settings` as AGENTCVR_* variables;
    stopped (SIGTERM) at the end if still running."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    values = {"media_root": media, "trace_dir": work / "traces", "upload_dir": work / "uploads", **settings}
    env |= {f"AGENTCVR_{name.upper()}": str(value) for name, value in values.items()}
    command = [sys.executable, "-m", "uvicorn", "--factory", "serve.app:create_app", "--port", str(port)]
    process = subprocess.Popen([*command, "--log-level", "warning"], env=env, cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
