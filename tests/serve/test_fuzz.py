"""Property-based fuzzing of the live server from its own OpenAPI schema (schemathesis): whatever the generated
request, valid or not, the answer is never a 5xx, and the server keeps answering."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from serve.app import create_app
from serve.settings import Settings

pytestmark = pytest.mark.slow  # schemathesis generates hundreds of requests

# The schema the live server publishes (building the app loads no models; the lifespan does, in the server fixture).
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi())


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case, server):
    # Generated paths almost never name a file under the media root, so /answer answers 4xx without running the agent;
    # the ones that do run it against the stub master.
    response = case.call(base_url=server.url, timeout=60)
    assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
    if "application/json" in str(response.headers.get("content-type")) and response.status_code >= 400:
        assert set(response.json()) == {"code", "message"}
