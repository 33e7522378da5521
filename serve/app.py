"""The FastAPI app: a lifespan that loads the policy and perception once, and the routers.

uvicorn --factory serve.app:create_app        # settings from AGENTCVR_* variables
agentcvr serve --port 8000                    # the same, with command-line options
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.concurrency import run_in_threadpool

from agentcvr.memory import fix_mmap_threshold
from serve import errors
from serve.metrics import Metrics
from serve.retention import keep_clean
from serve.routes import answer, health, traces
from serve.settings import Settings, get_settings
from serve.shutdown import on_exit_signal
from serve.workers import load_service

log = logging.getLogger("agentcvr.serve")


class _Wrap:
    """`app.add_middleware` takes a class: this one applies a function `ASGIApp -> ASGIApp`."""

    def __init__(self, app, wrap):
        self.app = wrap(app)

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.ready = False
        if not fix_mmap_threshold():  # before the models and caches fill the heap
            log.warning("not glibc: the mmap threshold is left as it is (RSS may creep over many requests)")
        app.state.service = await run_in_threadpool(load_service, settings, metrics)  # models load off the loop
        app.state.ready = True
        log.info("ready: policy %s, perception %s", settings.policy, settings.perception)
        cleaner = asyncio.create_task(keep_clean(app.state.service.store, settings))
        with on_exit_signal(asyncio.get_running_loop(), app.state.service.stop_all):
            yield
        cleaner.cancel()
        app.state.service.close()

    app = FastAPI(
        title="AgentCVR",
        version="0.1.0",
        summary="Answers questions over several videos with a master agent that calls visual and audio tools.",
        lifespan=lifespan,
    )
    app.state.settings, app.state.metrics, app.state.ready = settings, metrics, False
    errors.install(app)
    app.add_middleware(_Wrap, wrap=errors.catch_all)
    app.add_middleware(_Wrap, wrap=metrics.middleware)  # outermost: counts the error responses too
    app.include_router(answer.router)
    app.include_router(traces.router)
    app.include_router(traces.pages)
    app.include_router(health.router)

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(answer.request_schemas())
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
