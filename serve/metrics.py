"""Prometheus metrics of the service, in a registry of its own (one per app, so tests can build several)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentcvr.trace import Step

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "agentcvr_requests", "HTTP requests by route and status.", ["route", "status"], registry=r
        )
        self.latency = Histogram(
            "agentcvr_request_seconds", "HTTP request latency by route.", ["route"], buckets=_SECONDS, registry=r
        )
        self.queue_depth = Gauge("agentcvr_queue_depth", "Runs waiting for a slot.", registry=r)
        self.runs = Counter("agentcvr_runs", "Finished agent runs by status.", ["status"], registry=r)
        self.policy_seconds = Histogram(
            "agentcvr_policy_seconds", "Master policy time per turn.", buckets=_SECONDS, registry=r
        )
        self.perception_seconds = Histogram(
            "agentcvr_perception_seconds", "Perception time per tool call.", ["tool"], buckets=_SECONDS, registry=r
        )

    def observe_step(self, step: Step) -> None:
        if step.policy_seconds:
            self.policy_seconds.observe(step.policy_seconds)
        if step.tool in ("observe", "listen"):
            self.perception_seconds.labels(step.tool).observe(step.tool_seconds)

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """Pure ASGI (a BaseHTTPMiddleware would hide client disconnects from the handlers): count and time every
        request by its route template (never the raw path: ids would explode the labels)."""

        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            started, status = time.perf_counter(), 500

            async def sent(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, sent)
            finally:
                route = getattr(scope.get("route"), "path", "unmatched")
                self.requests.labels(route, str(status)).inc()
                self.latency.labels(route).observe(time.perf_counter() - started)

        return timed
