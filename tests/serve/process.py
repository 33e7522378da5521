"""A real server in its own process (`uvicorn --factory serve.app:create_app`) over two rendered videos, for the
serve benchmarks and the tests that need a main thread of their own (signals).

    media = rendered_media(work)                                  # work/media/cat.mp4, dog.mp4
    with server_process(work, media, policy="openai:stub", policy_url=stub.base_url) as (url, process):
        httpx.post(f"{url}/answer", json=...)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.rendered import render_facts
from tests.serve.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


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
