"""`/answer` and `/answer/stream` on a live uvicorn server over rendered videos: answers, traces, the viewer's data,
uploads, cancellation, failures and the queue."""

from __future__ import annotations

import json
import shutil
import threading
import time

import httpx
import pytest

from serve import links

BODY = {
    "question": "Which video shows a dog running?",
    "options": ["A. Video 1", "B. Video 2"],
    "videos": [{"path": "cat.mp4"}, {"path": "dog.mp4"}],
}

pytestmark = pytest.mark.slow  # a live server on rendered videos, ~20 s in all


def sse_events(response: httpx.Response) -> list[dict]:
    events, current = [], {}
    for line in response.iter_lines():
        if not line:
            if current:
                events.append(current)
            current = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            current[field] = value.strip()
    return events


def test_answer_runs_the_agent_on_real_videos(client):
    response = client.post("/answer", json=BODY)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "success" and body["answer"] == "B" and body["task"] == "NC"
    tools = [step["tool"] for step in body["steps"]]
    assert tools == ["observe", "listen", "answer"]
    observe, listen = body["steps"][0], body["steps"][1]
    assert observe["observation"] and observe["tool_seconds"] > 0 and observe["prompt_tokens"] == 11
    assert "dog" in listen["observation"].lower()  # Whisper heard "the dog is very fast today"
    assert body["timings"]["tool_seconds"] > 0 and body["videos"] == ["cat.mp4", "dog.mp4"]

    stored = client.get(f"/traces/{body['trace_id']}").json()
    assert stored == body
    page = client.get(f"/traces/{body['trace_id']}/view")
    assert page.status_code == 200 and "Which video shows a dog running?" in page.text
    thumb = client.get(f"/traces/{body['trace_id']}/frames/0/0.jpg")
    assert (
        thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg" and thumb.content[:2] == b"\xff\xd8"
    )


def test_stream_sends_metadata_steps_and_answer(client):
    with client.stream("POST", "/answer/stream", json=BODY) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no" and response.headers["cache-control"] == "no-cache"
        events = sse_events(response)
    kinds = [e["event"] for e in events]
    assert kinds == ["metadata", "step", "step", "step", "answer"]
    assert [int(e["id"]) for e in events] == list(range(5))
    trace_id = json.loads(events[0]["data"])["trace_id"]
    final = json.loads(events[-1]["data"])
    assert final["trace_id"] == trace_id and final["answer"] == "B"
    assert [json.loads(e["data"])["step"]["tool"] for e in events[1:4]] == ["observe", "listen", "answer"]


def test_uploads_join_media_paths(client, media, server):
    files = [("videos", ("my dog.mp4", (media / "dog.mp4").read_bytes(), "video/mp4"))]
    data = {"question": BODY["question"], "options": BODY["options"], "videos": "cat.mp4"}
    response = client.post("/answer", data=data, files=files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "success" and body["videos"] == ["cat.mp4", "my_dog.mp4"]
    uploads = server.app.state.settings.upload_dir
    assert not (uploads / body["trace_id"]).exists()  # the run is over: its upload is gone, its thumbnails stay
    assert client.get(f"/traces/{body['trace_id']}/frames/0/0.jpg").status_code == 200


def test_refused_uploads_leave_no_folder(client, server):
    uploads = server.app.state.settings.upload_dir
    before = set(uploads.iterdir())
    fake = [("videos", ("clip.mp4", b"not a video at all" * 100, "video/mp4"))]
    assert client.post("/answer", data={"question": "q"}, files=fake).status_code == 415
    assert set(uploads.iterdir()) == before


def test_retention_deletes_old_traces_and_uploads(client, server):
    from serve.retention import sweep

    service, settings = server.app.state.service, server.app.state.settings
    old = client.post("/answer", json=BODY).json()["trace_id"]
    leftover = settings.upload_dir / ("f" * 32)
    leftover.mkdir()
    later = time.time() + 30 * 24 * 3600  # a month on: past the default week
    new = client.post("/answer", json=BODY).json()["trace_id"]
    traces, folders = sweep(service.store, settings, now=later)
    assert traces >= 2 and folders == 1 and not leftover.exists()
    assert client.get(f"/traces/{old}").status_code == 404 and client.get(f"/traces/{new}").status_code == 404
    assert client.get(f"/traces/{old}/frames/0/0.jpg").status_code == 404  # its thumbnails went with it
    kept = client.post("/answer", json=BODY).json()["trace_id"]
    assert sweep(service.store, settings) == (0, 0) and client.get(f"/traces/{kept}").status_code == 200


def test_disconnect_cancels_the_run(client):
    slow = {**BODY, "question": "slow: which video?", "max_turns": 6}
    with client.stream("POST", "/answer/stream", json=slow) as response:
        trace_id = None
        for line in response.iter_lines():
            if line.startswith("data:") and trace_id is None:
                trace_id = json.loads(line[5:])["trace_id"]
            elif line.startswith("event: step"):
                break  # one step seen: the master is in its next call
    # the client is gone: the run stops in the middle of that call, with its partial trace
    deadline = time.time() + 15
    while (status := client.get(f"/traces/{trace_id}").json()["status"]) == "running" and time.time() < deadline:
        time.sleep(0.2)
    trace = client.get(f"/traces/{trace_id}").json()
    assert status == "cancelled" and 1 <= len(trace["steps"]) < 6
    assert trace["message"] == "the client went away and the run was stopped"


def test_a_blocking_client_that_gives_up_cancels_its_run(client, server):
    glacial = {**BODY, "question": "glacial: which video? #gone"}  # the master's first call would take a minute
    with pytest.raises(httpx.ReadTimeout):  # httpx closes the connection: the client is gone
        client.post("/answer", json=glacial, timeout=httpx.Timeout(60, read=1))
    store = server.app.state.service.store
    deadline = time.time() + 15
    while time.time() < deadline:
        rows = store._db.execute("SELECT body FROM traces WHERE body LIKE '%#gone%'").fetchall()
        trace = json.loads(rows[0][0]) if rows else {"status": "running"}
        if trace["status"] != "running":
            break
        time.sleep(0.2)
    assert trace["status"] == "cancelled" and trace["message"] == "the client went away and the run was stopped"


def test_policy_failure_keeps_the_partial_trace(client, stub):
    # one good turn, then the master's server fails on every retry
    stub.reply(content='<tool_call>{"name": "listen", "arguments": {"video": 2, "start": 5, "end": 12}}</tool_call>')
    for _ in range(3):
        stub.fail(500)
    body = client.post("/answer", json=BODY).json()
    assert body["status"] == "error" and body["answer"] is None
    assert "policy_error" in body["message"]
    assert [s["kind"] for s in body["steps"]] == ["tool", "policy_error"]
    page = client.get(f"/traces/{body['trace_id']}/view")
    assert page.status_code == 200 and "policy error" in page.text
    assert client.get("/healthz").status_code == 200


def test_full_queue_answers_429_then_503_with_retry_after(client, server):
    settings = server.app.state.settings
    slow = {**BODY, "question": "slow: which video?", "max_turns": 3}
    threads = [threading.Thread(target=client.post, args=("/answer",), kwargs={"json": slow}) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # both slots taken
    old = settings.max_queue, settings.queue_timeout
    try:
        settings.max_queue = 0
        busy = client.post("/answer", json=BODY)
        assert (
            busy.status_code == 429
            and busy.headers["retry-after"]
            and busy.json()
            == {
                "code": "busy",
                "message": "all 2 run slots are busy and this server queues none; retry later",
            }
        )
        settings.max_queue, settings.queue_timeout = 2, 0.2
        late = client.post("/answer", json=BODY)
        assert late.status_code == 503 and late.headers["retry-after"] and late.json()["code"] == "unavailable"
    finally:
        settings.max_queue, settings.queue_timeout = old
        for thread in threads:
            thread.join()


def test_api_key_guards_runs_but_not_health(client, server):
    from pydantic import SecretStr

    settings = server.app.state.settings
    settings.api_key = SecretStr("s3cret")
    try:
        refused = client.post("/answer", json=BODY)
        assert refused.status_code == 401 and refused.json() == {
            "code": "unauthorized",
            "message": "send the API key as 'Authorization: Bearer KEY'",
        }
        assert client.get("/traces/" + "0" * 32).status_code == 401
        assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
        ok = client.get("/traces/" + "0" * 32, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 404 and ok.json()["code"] == "trace_not_found"
    finally:
        settings.api_key = None


def test_signed_viewer_link_opens_one_trace_without_the_key(client, server):
    from pydantic import SecretStr

    settings = server.app.state.settings
    settings.api_key = SecretStr("s3cret")
    key = {"Authorization": "Bearer s3cret"}
    try:
        body = client.post("/answer", json=BODY, headers=key).json()
        link = body["viewer_url"]
        assert link.startswith(f"/traces/{body['trace_id']}/view?exp=") and "&token=" in link
        page = client.get(link)  # no header: a browser following the link
        assert page.status_code == 200 and "Which video shows a dog running?" in page.text
        query = link.split("?", 1)[1]
        assert f"/frames/0/0.jpg?{query}" in page.text.replace("&amp;", "&")  # the thumbnails are signed too
        assert client.get(f"/traces/{body['trace_id']}/frames/0/0.jpg?{query}").status_code == 200
        other = client.post("/answer", json=BODY, headers=key).json()["trace_id"]
        stale = links.link_query(settings, body["trace_id"], now=time.time() - 7200)  # made two hours ago
        refused = {
            "bare page": (f"/traces/{body['trace_id']}/view", "unauthorized", "signed viewer_url"),
            "api_key in the query": (f"/traces/{body['trace_id']}/view?api_key=s3cret", "unauthorized", "Bearer"),
            "another trace": (f"/traces/{other}/view?{query}", "unauthorized", "does not match this trace"),
            "altered token": (link[:-4] + "0000", "unauthorized", "does not match"),
            "expired": (f"/traces/{body['trace_id']}/view{stale}", "link_expired", "expired"),
            "exp not a number": (f"/traces/{body['trace_id']}/view?exp=soon&token=ab", "unauthorized", "unix time"),
            "JSON trace": (
                f"/traces/{body['trace_id']}?{query}",
                "unauthorized",
                "Bearer",
            ),  # the link opens pages only
        }
        for why, (url, code, words) in refused.items():
            response = client.get(url)
            assert response.status_code == 401 and response.json()["code"] == code, why
            assert words in response.json()["message"], why
    finally:
        settings.api_key = None


def test_health_ready_and_metrics(client):
    client.post("/answer", json=BODY)
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["policy"] == "openai:stub"
    text = client.get("/metrics").text
    for name in (
        "agentcvr_requests_total",
        "agentcvr_request_seconds_bucket",
        "agentcvr_queue_depth",
        "agentcvr_perception_seconds_bucket",
        "agentcvr_policy_seconds_bucket",
        'agentcvr_runs_total{status="success"}',
    ):
        assert name in text
    assert 'route="/answer"' in text


def test_timeout_returns_the_partial_trace(client, server):
    settings = server.app.state.settings
    old, settings.request_timeout = settings.request_timeout, 1.0
    try:
        started = time.time()
        body = client.post("/answer", json={**BODY, "question": "slow: which video?", "max_turns": 6}).json()
        took = time.time() - started
    finally:
        settings.request_timeout = old
    assert body["status"] == "timeout" and body["answer"] is None and "time limit" in body["message"]
    assert 1 <= len(body["steps"]) < 6 and took < 5
    deadline = time.time() + 10  # the worker stops at its next step and stores the same outcome
    while client.get(f"/traces/{body['trace_id']}").json()["status"] == "running" and time.time() < deadline:
        time.sleep(0.2)
    assert client.get(f"/traces/{body['trace_id']}").json()["status"] == "timeout"


def test_perception_failure_is_recorded_and_names_no_server_path(client, media):
    shutil.copy(media / "dog.mp4", media / "gone.mp4")
    body = {**BODY, "question": "slow: which video?", "videos": [{"path": "gone.mp4"}], "max_turns": 3}
    with client.stream("POST", "/answer/stream", json=body) as response:
        events = []
        for line in response.iter_lines():
            if line.startswith("event:"):
                events.append(line[6:].strip())
                if events.count("step") == 1:
                    (media / "gone.mp4").unlink()  # the file goes away mid-run: the next observe fails
            elif line.startswith("data:") and events[-1] in ("answer", "error"):
                final = json.loads(line[5:])
    kinds = [step["kind"] for step in final["steps"]]
    assert events[-1] == "error" and final["status"] == "error" and kinds[:2] == ["tool", "tool_error"]
    failed = final["steps"][1]
    assert "gone.mp4" in failed["error"] and str(media) not in json.dumps(final)
    assert client.get(f"/traces/{final['trace_id']}/view").status_code == 200


def test_blocking_client_that_gives_up_cancels_its_run(client, server):
    slow = {**BODY, "question": "slow: which video? #gone", "max_turns": 6}
    with httpx.Client(base_url=server.url, timeout=1.0) as impatient:
        try:
            impatient.post("/answer", json=slow)
        except httpx.ReadTimeout:
            pass
    deadline = time.time() + 15
    while time.time() < deadline:
        traces = server.app.state.service.store._db.execute(
            "SELECT status FROM traces WHERE body LIKE '%#gone%' ORDER BY created DESC LIMIT 1"
        ).fetchone()
        if traces and traces[0] != "running":
            break
        time.sleep(0.2)
    assert traces[0] == "cancelled"
