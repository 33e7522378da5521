"""The trace viewer in headless Chromium (Debian's `chromium`, driven by Playwright): the page shows the question,
the answer, every step, and thumbnails that really load; a full-page screenshot is saved for a person to look at."""

from __future__ import annotations

import shutil

import pytest

from tests.serve.test_answer import BODY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="needs the apt package chromium"), pytest.mark.slow]


def test_viewer_in_headless_chromium(client, server, stub, tmp_path):
    from playwright.sync_api import sync_playwright

    trace = client.post("/answer", json=BODY).json()
    assert trace["status"] == "success"
    stub.reply(content='<tool_call>{"name": "listen", "arguments": {"video": 2, "start": 5, "end": 12}}</tool_call>')
    for _ in range(3):
        stub.fail(500)  # then the master's server fails: an error trace with one good step
    failed = client.post("/answer", json=BODY).json()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{server.url}/traces/{trace['trace_id']}/view", wait_until="networkidle")
        text = page.inner_text("body")
        thumbs = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
        page.screenshot(path=str(tmp_path / "viewer.png"), full_page=True)
        page.goto(f"{server.url}/traces/{failed['trace_id']}/view", wait_until="networkidle")
        failed_text = page.inner_text("body")
        page.screenshot(path=str(tmp_path / "viewer-error.png"), full_page=True)
        browser.close()
    assert "error" in failed_text and "no answer: policy_error" in failed_text and "policy error" in failed_text
    assert "Which video shows a dog running?" in text and "success" in text
    assert "observe(video 2, 5–12 s" in text and "listen(video 2" in text and "answer('B')" in text
    assert len(thumbs) == 4 and all(done and width > 0 for done, width in thumbs)  # 4 frames observed, all shown
    assert (tmp_path / "viewer.png").stat().st_size > 10_000


def test_viewer_through_the_signed_link_with_a_key_set(client, server, tmp_path):
    from playwright.sync_api import sync_playwright
    from pydantic import SecretStr

    settings = server.app.state.settings
    settings.api_key = SecretStr("s3cret")
    try:
        trace = client.post("/answer", json=BODY, headers={"Authorization": "Bearer s3cret"}).json()
        assert trace["status"] == "success" and "token=" in trace["viewer_url"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1200, "height": 900})  # sends no Authorization header
            opened = page.goto(server.url + trace["viewer_url"], wait_until="networkidle")
            text = page.inner_text("body")
            thumbs = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
            page.screenshot(path=str(tmp_path / "viewer-signed.png"), full_page=True)
            bare = page.goto(f"{server.url}/traces/{trace['trace_id']}/view")
            refused = page.inner_text("body")
            browser.close()
    finally:
        settings.api_key = None
    assert opened.status == 200 and "Which video shows a dog running?" in text and "answer('B')" in text
    assert len(thumbs) == 4 and all(done and width > 0 for done, width in thumbs)  # the signed thumbnails loaded
    assert bare.status == 401 and "signed viewer_url" in refused
    assert (tmp_path / "viewer-signed.png").stat().st_size > 10_000
