"""Chat backends: anything that turns chat messages into text, for the LLM simulator and script augmentation.

A backend is a callable `backend(messages, json_schema=None) -> str` with a `name` (its identity in on-disk
caches). `OpenAIChat` talks to any OpenAI-compatible server (vLLM, llama.cpp, ...); `policies.gguf.GGUFChat` runs
the embedded GGUF model in-process. `CachedChat` wraps either with a JSONL cache keyed by a hash of the request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ChatBackend(Protocol):
    name: str

    def __call__(self, messages: list[dict], json_schema: dict | None = None) -> str: ...


class OpenAIChat:
    """A chat backend over an OpenAI-compatible URL (a client may be injected instead)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str = "EMPTY",
        client: Any = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        max_retries: int = 2,
    ):
        if client is None:
            from openai import OpenAI

            client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        self.client, self.model = client, model
        self.temperature, self.max_tokens = temperature, max_tokens
        self.name = f"openai:{model}"

    def __call__(self, messages: list[dict], json_schema: dict | None = None) -> str:
        kwargs: dict[str, Any] = {}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema}}
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens, **kwargs
        )
        return response.choices[0].message.content or ""


def request_key(name: str, messages: list[dict], json_schema: dict | None = None) -> str:
    """A stable sha256 of one request (backend identity, messages, schema)."""
    payload = json.dumps({"backend": name, "messages": messages, "schema": json_schema}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CachedChat:
    """A backend whose replies are remembered in a JSONL file (`{"key", "reply"}` per line), across runs."""

    def __init__(self, backend: ChatBackend, path: str | Path | None = None):
        self.backend, self.name = backend, backend.name
        self.path = Path(path) if path is not None else None
        self.hits = self.misses = 0
        self._replies: dict[str, str] = {}
        self._lock = threading.Lock()
        text = self.path.read_text() if self.path is not None and self.path.exists() else ""
        for line in text.splitlines():
            try:
                row = json.loads(line)
                self._replies[row["key"]] = row["reply"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line from an interrupted run
        self._needs_newline = bool(text) and not text.endswith("\n")  # append after a torn line on a fresh one

    def __call__(self, messages: list[dict], json_schema: dict | None = None) -> str:
        key = request_key(self.name, messages, json_schema)
        with self._lock:
            if key in self._replies:
                self.hits += 1
                return self._replies[key]
        reply = self.backend(messages, json_schema)
        with self._lock:
            self.misses += 1
            self._replies[key] = reply
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as handle:
                    prefix = "\n" if self._needs_newline else ""
                    handle.write(prefix + json.dumps({"key": key, "reply": reply}) + "\n")
                    self._needs_newline = False
        return reply
