"""Retention: traces and uploads do not pile up on a long-lived server.

Uploaded videos are deleted when their run ends (unless `keep_uploads`): the trace keeps its own thumbnails. Every
`cleanup_interval` s (and at start-up) a sweep deletes the traces older than `retention_hours`, and any upload folder
that old (left by a crash, or kept). `retention_hours = 0` keeps everything.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from serve.settings import Settings
from serve.store import TraceStore

log = logging.getLogger("agentcvr.serve")


def drop_uploads(settings: Settings, trace_id: str) -> None:
    """Delete the upload folder of one request (its run ended, or it was refused)."""
    shutil.rmtree(settings.upload_dir / trace_id, ignore_errors=True)


def sweep(store: TraceStore, settings: Settings, now: float | None = None) -> tuple[int, int]:
    """Delete what is older than the retention period: (traces deleted, upload folders deleted)."""
    if settings.retention_hours == 0:
        return 0, 0
    cutoff = (now or time.time()) - settings.retention_hours * 3600
    traces = store.delete_before(cutoff)
    folders = 0
    for folder in _children(settings.upload_dir):
        if folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            folders += 1
    return traces, folders


def _children(folder: Path) -> list[Path]:
    return [path for path in folder.iterdir() if path.is_dir()] if folder.is_dir() else []


async def keep_clean(store: TraceStore, settings: Settings) -> None:
    """Sweep now and every `cleanup_interval` s, until cancelled (the app's lifespan owns this task)."""
    while True:
        try:
            traces, folders = await run_in_threadpool(sweep, store, settings)
            if traces or folders:
                log.info("retention: deleted %d traces and %d upload folders", traces, folders)
        except Exception as error:  # a sweep failing must not stop the server; the next one tries again
            log.warning("retention sweep failed: %s", type(error).__name__)
        await asyncio.sleep(settings.cleanup_interval)
