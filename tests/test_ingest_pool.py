"""Uploads are analysed on threads of a lower CPU priority than reads (backend/ingest_pool.py)."""

from __future__ import annotations

import os
import threading

import pytest

from backend.ingest_pool import ingest_pool
from backend.limits import Limits


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_ingest_threads_and_the_threads_they_start_run_at_the_lower_priority():
    base = _nice()
    pool = ingest_pool(2, 5)
    try:

        def in_ingest():
            inner = []
            t = threading.Thread(target=lambda: inner.append(_nice()))  # as a parser's or inserter's thread
            t.start()
            t.join()
            return _nice(), inner[0]

        assert pool.submit(in_ingest).result() == (min(19, base + 5), min(19, base + 5))
    finally:
        pool.shutdown()
    assert _nice() == base  # the caller's own thread is untouched


def test_the_priority_is_a_setting():
    assert Limits.from_env({}).ingest_nice == 5
    assert Limits.from_env({"STALLSCOPE_INGEST_NICE": "0"}).ingest_nice == 0
    assert Limits.from_env({"STALLSCOPE_INGEST_NICE": "12"}).ingest_nice == 12
    for bad in ("-1", "20", "five"):
        with pytest.raises(ValueError, match="STALLSCOPE_INGEST_NICE"):
            Limits.from_env({"STALLSCOPE_INGEST_NICE": bad})


def test_an_upload_is_analysed_on_the_apps_ingest_threads(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from backend.api import analyses
    from backend.app import create_app
    from backend.store import Store

    seen = []
    real = analyses._ingest_and_precompute

    def spy(*args):
        seen.append((threading.current_thread().name, _nice()))
        return real(*args)

    monkeypatch.setattr(analyses, "_ingest_and_precompute", spy)
    app = create_app(Store(tmp_path / "db.duckdb"), warm=False, limits=Limits(ingest_nice=3))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        sample = "  8,0    0        1     0.000000000   100  Q   W 1000 + 8 [dd]\n"
        r = client.post("/api/analyses", files={"files": ("x.blkparse.txt", sample.encode(), "text/plain")})
        assert r.status_code == 201, r.text
    assert len(seen) == 1
    name, nice = seen[0]
    assert name.startswith("stallscope-ingest")
    assert nice == min(19, _nice() + 3)
