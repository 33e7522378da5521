"""A real local HTTP server that speaks OpenAI chat completions: the test double for a vLLM server.

Replies are queued by the test (`stub.reply(content=..., tool_calls=...)`, `stub.fail(500)`); every request body is
recorded in `stub.requests`, so tests can assert what actually went over the wire.

    with OpenAIStub() as stub:
        stub.reply(content="hello")
        OpenAI(base_url=stub.base_url, api_key="x").chat.completions.create(...)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any] | Callable[[dict], dict[str, Any]]


class OpenAIStub:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self._replies: list[tuple[int, Reply]] = []
        self._always: Callable[[dict], str] | None = None
        self._server: ThreadingHTTPServer | None = None
        self.dropped = 0  # replies the client was no longer there to read

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the stub as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, content: str | None = None, tool_calls: list[dict] | None = None, usage: tuple = (11, 7)) -> None:
        """Queue one assistant message (tool calls as `{"name", "arguments": dict}`)."""
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for i, c in enumerate(tool_calls or [])
        ]
        message = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
        self._replies.append((200, _completion(message, usage)))

    def respond(self, handler: Callable[[dict], str]) -> None:
        """Queue a reply computed from the request body: `handler(request) -> content`."""
        self._replies.append((200, lambda request: _completion({"role": "assistant", "content": handler(request)})))

    def always(self, handler: Callable[[dict], str]) -> None:
        """Answer every request that finds no queued reply with `handler(request) -> content` (servers, load)."""
        self._always = handler

    def fail(self, status: int = 500) -> None:
        self._replies.append((status, {"error": {"message": "stub failure", "type": "server_error"}}))

    def __enter__(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                stub.requests.append({"path": self.path, **body})
                if self.path.endswith("/chat/completions") and not stub._replies and stub._always is not None:
                    status, payload = 200, _completion({"role": "assistant", "content": stub._always(body)})
                elif not self.path.endswith("/chat/completions") or not stub._replies:
                    status, payload = 500, {"error": {"message": f"no reply queued for {self.path}"}}
                else:
                    status, reply = stub._replies.pop(0)
                    payload = reply(body) if callable(reply) else reply
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client dropped the call (a stopped run)
                    stub.dropped += 1

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def _completion(message: dict, usage: tuple = (11, 7)) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }
