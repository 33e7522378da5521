"""One error shape for every failure, `{"code", "message"}`: handlers for our errors, FastAPI's validation errors,
Starlette's HTTP errors and anything unexpected (logged by type only: no request paths or
stack traces in responses or logs)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("agentcvr.serve")

_HTTP_CODES = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    429: "busy",
    503: "unavailable",
}


class ApiError(Exception):
    """An error the client can act on: HTTP status, a stable code and a message naming the field or limit."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


def _field(location: tuple) -> str:
    parts = [str(p) for p in location if p not in ("body",)]
    return ".".join(parts) or "body"


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_: Request, error: ApiError) -> JSONResponse:
        return error_response(error.status, error.code, error.message, error.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        problems = []
        for item in error.errors()[:5]:
            if item.get("type") == "json_invalid":
                problems.append("the body is not valid JSON")
            else:
                problems.append(f"{_field(tuple(item.get('loc', ())))}: {item.get('msg', 'invalid')}")
        return error_response(422, "invalid_request", "; ".join(problems) or "invalid request")

    @app.exception_handler(HTTPException)
    async def _http(_: Request, error: HTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(error.status_code, "http_error")
        return error_response(error.status_code, code, str(error.detail), getattr(error, "headers", None))


def catch_all(app: ASGIApp) -> ASGIApp:
    """Pure ASGI: an unexpected exception becomes a 500 in the one error shape, logged by type only (an Exception
    handler would be re-raised by Starlette, a stack trace in the log; a BaseHTTPMiddleware hides disconnects)."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sent(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, sent)
        except Exception as error:
            route = getattr(scope.get("route"), "path", "?")
            log.error("unexpected %s on %s %s", type(error).__name__, scope.get("method", ""), route)
            if scope["type"] == "http" and not started:
                response = error_response(500, "internal_error", "the server failed on this request; it keeps serving")
                await response(scope, receive, send)

    return guarded
