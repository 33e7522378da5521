"""Dependencies of the handlers: the app's settings and run service, and the optional API key."""

from __future__ import annotations

import secrets

from fastapi import Request

from serve.errors import ApiError
from serve.runs import RunService
from serve.settings import Settings
from serve.store import TraceStore


def settings(request: Request) -> Settings:
    return request.app.state.settings


def service(request: Request) -> RunService:
    return request.app.state.service


def store(request: Request) -> TraceStore:
    return request.app.state.service.store


def api_key(request: Request) -> None:
    """`Authorization: Bearer KEY` when the server has a key (health endpoints stay open, as in vLLM)."""
    key = request.app.state.settings.api_key
    if key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
        token.strip().encode(), key.get_secret_value().encode()
    ):
        raise ApiError(
            401, "unauthorized", "send the API key as 'Authorization: Bearer KEY'", {"WWW-Authenticate": "Bearer"}
        )
