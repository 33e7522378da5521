"""A real uvicorn server on a free port, serving rendered videos from a media root, with the OpenAI stub as master.

The stub plays a short, sensible master: observe video 2, listen to it, answer B (questions with 'slow' in them
make every turn take 0.4 s and never answer, for cancellation and queue tests; 'glacial' ones a minute).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.openai_stub import OpenAIStub
from tests.rendered import needs_tools, render_facts


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
