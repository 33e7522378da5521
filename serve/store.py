"""Traces on disk: one SQLite file (`traces.sqlite` in the configured folder) that survives restarts.

A run is saved when it starts (status `running`), step by step as it goes, and with its outcome at the end, so a run
that fails or is cut off keeps its partial trace. Frame thumbnails of observe steps are stored beside it as JPEG.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from serve.schemas import AnswerResponse, StepOut

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (id TEXT PRIMARY KEY, created REAL, status TEXT, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS frames (
    trace_id TEXT, step INTEGER, k INTEGER, t REAL, video INTEGER, jpeg BLOB, PRIMARY KEY (trace_id, step, k)
);
"""


class TraceStore:
    """Thread-safe: the agent's worker threads append steps while the event loop reads traces."""

    def __init__(self, folder: str | Path):
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.path = Path(folder) / "traces.sqlite"
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def save(self, response: AnswerResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?)",
                (response.trace_id, response.created, response.status, response.model_dump_json()),
            )

    def append_step(self, trace_id: str, step: StepOut) -> None:
        """Add one step to a running trace (read, extend, write under the lock: steps of one run come in order)."""
        with self._lock:
            row = self._db.execute("SELECT body FROM traces WHERE id = ?", (trace_id,)).fetchone()
            if row is None:
                return
            body = json.loads(row[0])
            body["steps"].append(step.model_dump(mode="json"))
            self._db.execute("UPDATE traces SET body = ? WHERE id = ?", (json.dumps(body), trace_id))

    def get(self, trace_id: str) -> AnswerResponse | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM traces WHERE id = ?", (trace_id,)).fetchone()
        return AnswerResponse.model_validate_json(row[0]) if row else None

    def add_frames(self, trace_id: str, step: int, video: int, frames: list[tuple[float, bytes]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO frames VALUES (?, ?, ?, ?, ?, ?)",
                [(trace_id, step, k, t, video, jpeg) for k, (t, jpeg) in enumerate(frames)],
            )

    def frame_index(self, trace_id: str) -> dict[int, list[tuple[int, float]]]:
        """step -> [(k, time)] of the stored thumbnails of a trace."""
        with self._lock:
            rows = self._db.execute(
                "SELECT step, k, t FROM frames WHERE trace_id = ? ORDER BY step, k", (trace_id,)
            ).fetchall()
        index: dict[int, list[tuple[int, float]]] = {}
        for step, k, t in rows:
            index.setdefault(step, []).append((k, t))
        return index

    def frame(self, trace_id: str, step: int, k: int) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT jpeg FROM frames WHERE trace_id = ? AND step = ? AND k = ?", (trace_id, step, k)
            ).fetchone()
        return row[0] if row else None

    def delete_before(self, cutoff: float) -> int:
        """Delete the traces (and their thumbnails) created before `cutoff` (unix s) that are no longer running;
        their number. SQLite reuses the freed pages, so a store under retention stops growing."""
        with self._lock:
            ids = [
                row[0]
                for row in self._db.execute(
                    "SELECT id FROM traces WHERE created < ? AND status != 'running'", (cutoff,)
                ).fetchall()
            ]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                self._db.execute(f"DELETE FROM frames WHERE trace_id IN ({marks})", chunk)
                self._db.execute(f"DELETE FROM traces WHERE id IN ({marks})", chunk)
        return len(ids)

    def close(self) -> None:
        with self._lock:
            self._db.close()
