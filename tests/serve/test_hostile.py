"""Hostile input against the live server: every row gets a 4xx in the one error shape, never a 5xx, and the server
answers a good request afterwards. Then a property-based fuzzer (schemathesis) over the OpenAPI schema."""

from __future__ import annotations

import json
import socket

import pytest

GOOD = {"question": "Which video shows a dog?", "options": ["A. Video 1", "B. Video 2"]}
TWO = [{"path": "cat.mp4"}, {"path": "dog.mp4"}]

pytestmark = pytest.mark.slow  # a live server on rendered videos


def body(**fields) -> dict:
    return {**GOOD, "videos": TWO, **fields}


# (why, request kwargs for httpx, expected status, expected code)
JSON_CASES = [
    ("path traversal", {"json": body(videos=[{"path": "../../etc/passwd"}])}, 400, "path_outside_media_root"),
    ("traversal inside a path", {"json": body(videos=[{"path": "a/../../x.mp4"}])}, 400, "path_outside_media_root"),
    ("absolute path", {"json": body(videos=[{"path": "/etc/passwd"}])}, 400, "path_outside_media_root"),
    ("home path", {"json": body(videos=[{"path": "~/x.mp4"}])}, 400, "path_outside_media_root"),
    ("windows drive", {"json": body(videos=[{"path": "C:\\x.mp4"}])}, 400, "path_outside_media_root"),
    ("NUL byte", {"json": body(videos=[{"path": "dog.mp4\u0000.txt"}])}, 400, "invalid_path"),
    ("symlink to a system file", {"json": body(videos=[{"path": "escape.mp4"}])}, 400, "path_outside_media_root"),
    ("symlink to a video outside", {"json": body(videos=[{"path": "outside.mp4"}])}, 400, "path_outside_media_root"),
    ("file name too long", {"json": body(videos=[{"path": "a" * 1000 + ".mp4"}])}, 400, "invalid_path"),
    ("missing file", {"json": body(videos=[{"path": "nope.mp4"}])}, 404, "video_not_found"),
    ("a folder", {"json": body(videos=[{"path": "."}])}, 404, "video_not_found"),
    ("text file renamed .mp4", {"json": body(videos=[{"path": "fake.mp4"}])}, 415, "not_a_video"),
    ("NaN max_turns", {"content": '{"question": "q", "videos": [{"path": "dog.mp4"}], "max_turns": NaN}'}, 422, None),
    ("negative max_turns", {"json": body(max_turns=-3)}, 422, "invalid_request"),
    ("zero max_turns", {"json": body(max_turns=0)}, 422, "invalid_request"),
    ("huge max_turns", {"json": body(max_turns=10**30)}, 422, "max_turns_too_large"),
    ("fractional max_turns", {"json": body(max_turns=2.5)}, 422, "invalid_request"),
    ("10k-character question", {"json": body(question="why " * 2500)}, 422, "question_too_long"),
    ("100 videos", {"json": body(videos=[{"path": "dog.mp4"}] * 100)}, 422, "too_many_videos"),
    ("no videos", {"json": body(videos=[])}, 422, "invalid_request"),
    ("empty question", {"json": body(question="")}, 422, "invalid_request"),
    ("whitespace-only question", {"json": body(question=" \n\t ")}, 422, "invalid_request"),
    ("question not a string", {"json": body(question=42)}, 422, "invalid_request"),
    ("unknown task", {"json": body(task="XYZ")}, 422, "unknown_task"),
    ("blank option", {"json": body(options=["A. x", " "])}, 422, "invalid_request"),
    ("unknown field", {"json": body(temperature=2)}, 422, "invalid_request"),
    ("videos as a string", {"json": body(videos="dog.mp4")}, 422, "invalid_request"),
    ("body is a list", {"json": [1, 2]}, 422, "invalid_request"),
    ("malformed JSON", {"content": b'{"question": "q", "videos": [', "json_type": True}, 400, "malformed_json"),
    ("not UTF-8", {"content": b"\xff\xfe\x00{", "json_type": True}, 400, "malformed_json"),
    ("deeply nested JSON", {"content": "[" * 100_000 + "]" * 100_000, "json_type": True}, 400, "json_too_deep"),
    ("text/plain body", {"content": json.dumps(body()), "headers": {"content-type": "text/plain"}}, 415, None),
    ("no content type", {"content": json.dumps(body()), "headers": {"content-type": ""}}, 415, None),
    ("form-urlencoded", {"data": {"question": "q"}}, 415, "unsupported_media_type"),
    ("huge JSON body", {"content": b'{"question": "' + b"x" * (9 << 20) + b'"}', "json_type": True}, 413, None),
]


# the words that name the problem, for the rows whose wording once did not
WORDS = {
    "NUL byte": "contains a NUL byte",
    "deeply nested JSON": "nests deeper than the parser allows",
    "whitespace-only question": "question must not be blank",
    "huge max_turns": "at most 6",
    "file name too long": "cannot name a file",
}


def _send(client, kwargs: dict):
    kwargs = dict(kwargs)
    if kwargs.pop("json_type", False) or ("content" in kwargs and "headers" not in kwargs):
        kwargs["headers"] = {"content-type": "application/json"}
    return client.post("/answer", **kwargs)


@pytest.mark.parametrize(("why", "kwargs", "status", "code"), JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_hostile_json_is_refused_with_a_clear_error(client, media, why, kwargs, status, code):
    response = _send(client, kwargs)
    assert response.status_code == status, response.text
    error = response.json()
    assert set(error) == {"code", "message"} and error["message"]
    if code:
        assert error["code"] == code
    assert WORDS.get(why, "") in error["message"]
    assert str(media) not in response.text and "Traceback" not in response.text  # no server paths, no stack traces


def test_hostile_uploads(client, media):
    fake = [("videos", ("clip.mp4", b"not a video at all" * 100, "video/mp4"))]
    refused = client.post("/answer", data={"question": "q"}, files=fake)
    assert refused.status_code == 415 and refused.json()["code"] == "not_a_video"
    huge = [("videos", ("big.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * (9 << 20), "video/mp4"))]
    assert client.post("/answer", data={"question": "q"}, files=huge).status_code == 413
    big_file = [("videos", ("big.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * (5 << 20), "video/mp4"))]
    too_big = client.post("/answer", data={"question": "q"}, files=big_file)  # under the request limit, over upload's
    assert too_big.status_code == 413 and too_big.json()["code"] == "video_too_large"
    many = [("videos", (f"{i}.mp4", b"x", "video/mp4")) for i in range(20)]
    assert client.post("/answer", data={"question": "q"}, files=many).status_code in (400, 422)
    traversal = [("videos", ("../../../../tmp/evil.mp4", (media / "dog.mp4").read_bytes(), "video/mp4"))]
    ok = client.post("/answer", data={"question": "Which video shows a dog?"}, files=traversal)
    assert ok.status_code == 200 and ok.json()["videos"] == ["evil.mp4"]  # the name is reduced to a base name
    broken = client.post(
        "/answer", content=b"--xx\r\nnonsense", headers={"content-type": "multipart/form-data; boundary=xx"}
    )
    assert 400 <= broken.status_code < 500
    long_path = client.post("/answer", files=[("question", (None, "q")), ("videos", (None, "v" * 2000))])  # a field
    assert long_path.status_code == 422 and long_path.json()["message"].startswith("videos.0.path: String should")


TRACE = "0" * 32
TRACE_PATHS = [
    ("/traces/../../etc/passwd", ""),
    ("/traces/" + "a" * 5000, ""),
    ("/traces/%00", ""),
    ("/traces/x/view", ""),
    ("/traces/x/frames/0/0.jpg", ""),
    (f"/traces/{TRACE}/frames/0/99999999999999999999999.jpg", "k: Input should be less than or equal to 10000"),
    (f"/traces/{TRACE}/frames/99999999999999999999999/0.jpg", "step: Input should be less than or equal to 10000"),
    (f"/traces/{TRACE}/frames/-1/0.jpg", "step: Input should be greater than or equal to 0"),
    (f"/traces/{TRACE}/frames/0/x.jpg", "k: Input should be a valid integer"),
    (f"/traces/{TRACE}/view?exp=1&token=" + "f" * 64, ""),  # no key set: the link is not even looked at
]


@pytest.mark.parametrize(("path", "words"), TRACE_PATHS)
def test_hostile_trace_ids(client, path, words):
    response = client.get(path)
    assert 400 <= response.status_code < 500 and set(response.json()) == {"code", "message"}, response.text
    assert words in response.json()["message"]


def _raw(server, request: bytes, wait: float) -> tuple[int, bytes]:
    """Send bytes as they are (httpx would fix the headers) and read the reply (at most `wait` s): (status, body)."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def test_a_body_shorter_than_its_content_length_is_refused_promptly(server):
    sent = json.dumps(body()).encode()
    head = "POST /answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    # the server's body_idle_timeout is 2 s in these tests: the reply comes then, not never (before: none in 40 s)
    status, reply = _raw(server, f"{head}Content-Length: {len(sent) + 100}\r\n\r\n".encode() + sent, 15)
    error = json.loads(reply)
    assert status == 408 and error["code"] == "body_incomplete", error
    assert f"stopped after {len(sent)} bytes of the {len(sent) + 100} that Content-Length announced" in error["message"]
    upload = (
        "POST /answer HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=xx\r\n"
        'Content-Length: 5000\r\n\r\n--xx\r\nContent-Disposition: form-data; name="question"\r\n\r\nq\r\n'
    )
    status, reply = _raw(server, upload.encode(), wait=15)
    assert status == 408 and "of the 5000 that Content-Length announced" in json.loads(reply)["message"]


def test_content_length_that_is_not_a_number(server):
    head = "POST /answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12abc\r\n\r\n{}"
    status, reply = _raw(server, head.encode(), wait=15)
    assert status == 400 and b"Invalid HTTP request" in reply  # uvicorn refuses it before the app


def test_max_upload_mb_limits_media_root_files_too_and_prints_fractions(client, server):
    settings = server.app.state.settings
    old, settings.max_upload_mb = settings.max_upload_mb, 0.01  # 10 KiB: smaller than the rendered videos
    try:
        response = client.post("/answer", json=body())
    finally:
        settings.max_upload_mb = old
    error = response.json()
    assert response.status_code == 413 and error["code"] == "video_too_large"
    assert (
        error["message"].startswith("video 'cat.mp4' is 0.")
        and "the limit (max_upload_mb) is 0.01 MiB" in error["message"]
    )


def test_server_still_answers_after_the_hostile_list(client):
    assert client.get("/healthz").status_code == 200
    response = client.post("/answer", json=body())
    assert response.status_code == 200 and response.json()["answer"] == "B"


def test_an_unexpected_failure_is_a_500_in_the_error_shape(caplog):
    import asyncio

    import httpx

    from serve.errors import catch_all

    async def broken(scope, receive, send):
        raise RuntimeError("secret detail /srv/private/path")

    async def call():
        transport = httpx.ASGITransport(app=catch_all(broken))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            return await http.get("/anything")

    response = asyncio.run(call())
    assert response.status_code == 500 and response.json()["code"] == "internal_error"
    assert "secret" not in response.text and "secret" not in caplog.text and "RuntimeError" in caplog.text
