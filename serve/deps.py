"""Dependencies of the handlers: the app's settings and run service, and the optional API key."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Query, Request

from serve.errors import ApiError
from serve.links import check_link
from serve.runs import RunService
from serve.settings import Settings
from serve.store import TraceStore


def settings(request: Request) -> Settings:
    return request.app.state.settings


def service(request: Request) -> RunService:
    return request.app.state.service


def store(request: Request) -> TraceStore:
    return request.app.state.service.store


def _has_key(request: Request) -> bool:
    """Whether the request carries the server's key as `Authorization: Bearer KEY` (or the server has none)."""
    key = request.app.state.settings.api_key
    if key is None:
        return True
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(
        token.strip().encode(), key.get_secret_value().encode()
    )


def api_key(request: Request) -> None:
    """`Authorization: Bearer KEY` when the server has a key (health endpoints stay open, as in vLLM)."""
    if not _has_key(request):
        raise ApiError(
            401, "unauthorized", "send the API key as 'Authorization: Bearer KEY'", {"WWW-Authenticate": "Bearer"}
        )


def viewer_access(
    request: Request,
    trace_id: str,
    exp: Annotated[str | None, Query(description="Expiry of a signed viewer link (unix s).")] = None,
    token: Annotated[str | None, Query(description="Signature of a signed viewer link.", max_length=128)] = None,
) -> None:
    """The key, or the signed link of this trace (`serve.links`): a browser opens the page and its thumbnails."""
    if not _has_key(request):
        check_link(request.app.state.settings, trace_id, exp, token)
