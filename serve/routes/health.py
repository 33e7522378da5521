"""Health, readiness and Prometheus metrics; open without the API key (as vLLM's are)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Models loaded and workers alive")
async def readyz(request: Request) -> JSONResponse:
    """200 once the policy and perception are loaded and the run pool is up; 503 with the reason otherwise."""
    service = getattr(request.app.state, "service", None)
    if service is None or not request.app.state.ready:
        return JSONResponse({"code": "not_ready", "message": "models are still loading"}, status_code=503)
    if not service.alive:
        return JSONResponse({"code": "not_ready", "message": "the run workers are stopped"}, status_code=503)
    return JSONResponse({"status": "ready", "policy": service.settings.policy, "running": service.running})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Requests, latency histograms, queue depth, finished runs, perception and policy seconds."""
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
