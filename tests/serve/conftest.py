"""A real uvicorn server on a free port, serving rendered videos from a media root, with the OpenAI stub as master
(`serve.testing.master`: observe video 2, listen to it, answer B; 'slow' and 'glacial' questions never answer)."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from agentcvr.openai_stub import OpenAIStub
from scripts_gen.known_facts import render_facts
from serve.testing import free_port, master
from tests.rendered import needs_tools


class LiveServer:
    def __init__(self, app, port: int):
        import uvicorn

        self.url = f"http://127.0.0.1:{port}"
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.time() + 60
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def media(tmp_path_factory) -> Path:
    """A media root holding copies of two rendered videos, a fake mp4 and symlinks that lead out of it."""
    if needs_tools.args[0]:  # the apt tools the renderer needs are missing
        pytest.skip(needs_tools.kwargs["reason"])
    base = tmp_path_factory.getbasetemp()
    _, episode, _ = render_facts(base)
    root = base / "media"
    if not root.exists():
        root.mkdir()
        shutil.copy(episode.videos[0].path, root / "cat.mp4")
        shutil.copy(episode.videos[1].path, root / "dog.mp4")
        (root / "fake.mp4").write_text("this is a text file, not a video\n" * 10)
        (root / "escape.mp4").symlink_to("/etc/hostname")
        (root / "outside.mp4").symlink_to(episode.videos[1].path)  # a real video, but outside the root
        (root / "inside.mp4").symlink_to("dog.mp4")  # a link that stays inside is fine
    return root


@pytest.fixture(scope="session")
def stub():
    with OpenAIStub() as running:
        running.always(master)
        yield running


@pytest.fixture(scope="session")
def server(media, stub, tmp_path_factory):
    from serve.app import create_app
    from serve.settings import Settings

    folder = tmp_path_factory.mktemp("serve")
    settings = Settings(
        policy="openai:stub",
        policy_url=stub.base_url,
        media_root=media,
        upload_dir=folder / "uploads",
        trace_dir=folder / "traces",
        max_upload_mb=4,
        max_request_mb=8,
        max_turns=6,
        max_concurrent=2,
        max_queue=2,
        queue_timeout=5,
        request_timeout=60,
        body_idle_timeout=2,  # a body that stops arriving is refused after 2 s (tests wait for it)
    )
    with LiveServer(create_app(settings), free_port()) as live:
        yield live


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as http:
        yield http
