"""A master policy behind any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, hosted APIs).

Two modes, matching the two system prompts:
- `tools`: the action tool schemas (generated from the pydantic models) go in `tools=`; the server returns
  `tool_calls` (or, for servers without a tool parser, Qwen `<tool_call>` text; the parser reads both);
- `json`: the published AgentCVR one-object-per-turn protocol, constrained by `response_format` json_schema
  (`json_protocol.turn_schema`), which vLLM enforces with its guided-decoding backend.

A run told to stop (`agentcvr.cancel`) drops its HTTP call at once: the request runs on the policy's own event loop
(an `AsyncOpenAI` client), and cancelling its task closes the connection, which vLLM and llama.cpp's server take as
the client going away and abort the generation.

    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-call-parser hermes
    policy = OpenAIPolicy("http://localhost:8000/v1", "Qwen/Qwen3-8B", mode="tools")
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

from agentcvr import cancel
from agentcvr.actions import tool_schemas
from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.policies.json_protocol import turn_schema
from agentcvr.session import wire_messages

Mode = Literal["tools", "json"]


class OpenAIPolicy:
    """`Policy` over an OpenAI-compatible server; `client` (an `openai.OpenAI`) may be injected."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str = "",
        api_key: str = "EMPTY",
        mode: Mode = "tools",
        temperature: float = 0.0,
        timeout: float = 120.0,
        max_retries: int = 2,
        max_tokens: int = 1024,
        client: Any = None,
        extra_body: dict[str, Any] | None = None,
    ):
        if mode not in ("tools", "json"):
            raise ValueError(f"unknown mode {mode!r}: choose 'tools' or 'json'")
        if not model:
            raise ValueError("OpenAIPolicy needs a model name, e.g. 'Qwen/Qwen3-8B'")
        self._loop: asyncio.AbstractEventLoop | None = None
        if client is None:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
            self._loop = asyncio.new_event_loop()  # the calls of every worker thread run here, each a task
            threading.Thread(target=self._loop.run_forever, name="openai-policy", daemon=True).start()
        self.client, self.model, self.protocol = client, model, mode
        self.temperature, self.max_tokens = temperature, max_tokens
        self.extra_body = extra_body or {}  # server-specific knobs, e.g. {"chat_template_kwargs": {...}} on vLLM

    def request(self, messages: list[dict], episode: Episode) -> dict[str, Any]:
        """The keyword arguments of one `chat.completions.create` call."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": wire_messages(messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.protocol == "tools":
            kwargs["tools"] = tool_schemas()
        else:
            schema = turn_schema(episode)
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "agentcvr_turn", "schema": schema},
            }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        cancel.check()
        call = self.client.chat.completions.create(**self.request(messages, episode))
        if self._loop is not None:  # our async client: a task that a stopped run cancels (`cancel.wait`)
            response = cancel.wait(asyncio.run_coroutine_threadsafe(call, self._loop))
        else:  # an injected synchronous client has already answered
            response = call
        if not response.choices:
            raise RuntimeError(f"{self.model}: the server returned no choices")
        message = response.choices[0].message
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        ]
        usage = response.usage
        return PolicyOutput(
            content=message.content,
            tool_calls=calls or None,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )
