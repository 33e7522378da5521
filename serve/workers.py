"""Loading the shared workers once at start-up: the master policy, the perception stack and the trace store."""

from __future__ import annotations

from agentcvr.components import make_perception, make_policy
from serve.metrics import Metrics
from serve.runs import RunService, SerialPolicy
from serve.settings import Settings
from serve.store import TraceStore


def load_service(settings: Settings, metrics: Metrics) -> RunService:
    """Build and warm the policy and perception (so the first request does not pay for loading)."""
    local = {"threads": settings.policy_threads, "prompt_batch": settings.policy_prompt_batch}
    policy = make_policy(settings.policy, base_url=settings.policy_url, reader=settings.policy_reader, **local)
    if not settings.policy.startswith("openai"):
        policy = SerialPolicy(policy)  # one local model, one caller at a time
    perception = make_perception(
        settings.perception, **(settings.perception_options() if settings.perception == "real" else {})
    )
    if hasattr(perception, "describer") and getattr(perception.config, "visual", "") == "describer":
        perception.describer  # noqa: B018 (loads the OCR describer now)
    if hasattr(perception, "audio"):
        perception.audio.model  # noqa: B018 (loads Whisper now)
    settings.upload_dir.mkdir(parents=True, exist_ok=True)
    return RunService(policy, perception, TraceStore(settings.trace_dir), settings, metrics)
