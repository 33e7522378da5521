"""Signed viewer links: with an API key set, a browser (which sends no Authorization header) can still open a trace
page and its thumbnails, through the link the `/answer` reply carries.

    /traces/{id}/view?exp=1795650000&token=<hex>      token = HMAC-SHA256(key, "{id}:{exp}"), valid until exp

The link opens that one trace's page and thumbnails, nothing else, and only until `exp` (unix s;
`viewer_link_seconds` after it was made). Without a key the plain path is the link.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import urlencode

from serve.errors import ApiError
from serve.schemas import AnswerResponse
from serve.settings import Settings


def _signature(key: str, trace_id: str, expires: int) -> str:
    return hmac.new(key.encode(), f"{trace_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def link_query(settings: Settings, trace_id: str, now: float | None = None) -> str:
    """The query string that opens this trace's page and thumbnails ('' when the server has no key)."""
    if settings.api_key is None:
        return ""
    expires = int((now or time.time()) + settings.viewer_link_seconds)
    token = _signature(settings.api_key.get_secret_value(), trace_id, expires)
    return "?" + urlencode({"exp": expires, "token": token})


def viewer_url(settings: Settings, trace_id: str) -> str:
    """The viewer page of a trace, relative to the server, signed when a key is set."""
    return f"/traces/{trace_id}/view{link_query(settings, trace_id)}"


def with_viewer(trace: AnswerResponse, settings: Settings) -> AnswerResponse:
    """The trace with a fresh (signed, when a key is set) link to its viewer page."""
    return trace.model_copy(update={"viewer_url": viewer_url(settings, trace.trace_id)})


def check_link(settings: Settings, trace_id: str, expires: str | None, token: str | None) -> None:
    """Accept a signed link for `trace_id`; `ApiError` 401 saying what is wrong with it otherwise."""
    assert settings.api_key is not None
    if not expires or not token:
        raise ApiError(
            401,
            "unauthorized",
            "send the API key as 'Authorization: Bearer KEY', or open the signed viewer_url of the /answer reply",
            {"WWW-Authenticate": "Bearer"},
        )
    if not expires.isdigit() or len(expires) > 12:
        raise ApiError(401, "unauthorized", "the viewer link's exp is not a unix time in seconds")
    if not hmac.compare_digest(token, _signature(settings.api_key.get_secret_value(), trace_id, int(expires))):
        raise ApiError(401, "unauthorized", "the viewer link's token does not match this trace (or was altered)")
    if int(expires) < time.time():
        raise ApiError(401, "link_expired", "the viewer link has expired; GET /traces/{id} with the key for a new one")
