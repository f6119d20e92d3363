"""A database written by an earlier release (tests/fixtures/release-2f0e012.*, made by make_release_db.py at that
commit) opens with today's code and answers every read exactly as that release did."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RELEASE = "release-2f0e012"


@pytest.fixture
def release_store(tmp_path):
    db = tmp_path / f"{RELEASE}.duckdb"
    with gzip.open(FIXTURES / f"{RELEASE}.duckdb.gz", "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    store = Store(db)
    yield store
    store.close()


# fields added to answers since that release (each a deliberate API change, tested where it was made): the kept
# answers are compared without them
ADDED_SINCE = {
    "files",  # a source's files (0c17765: a blktrace per-CPU set is one source)
    "min",
    "avg",
    "btt",  # the dispatch summary's min and mean, and btt's figures (none for older files)
    "locks",  # a flame graph's per-lock totals (8043f6d)
    "bytes",  # an analysis' uploaded bytes in the list (2b2903b; a source's bytes were always there)
    "tgid",  # a timeline task lane's thread group (none for older files: they have no task_tgids)
    "has_requests",  # whether a source's block requests are the analysis' (the page's Dispatch tab for perf's)
    "next_cursor",  # /calls: the cursor of its next page (cursor paging, issue 26)
    "wait_kind",
    "wait_rule",
    "wait_why",  # why a wait waited (backend/wait_kinds.py, issue 33; migration 5 classifies the kept waits)
    "layers",  # a request's block stack layers (27a9ae0: a dm bio and its disk request as one I/O)
    "idle",  # a heatmap's: idle sleeps counted too (metric=wait&idle=true; issue 33)
}


# a latency heatmap's bins since issue 33 (point 2): from the decade below the fastest to above the slowest (the
# release's started at 1 µs): its edges and so its cells' rows differ; the same events are binned (their count, the
# slowest one and every other field are the release's)
REBINNED = ("y_bins", "y_edges_ns", "cells")


def _rebinned(body: dict, kept: dict) -> tuple[dict, dict]:
    """A heatmap and the release's without their bins, once the same events are in them."""

    def binned(h: dict) -> tuple:
        top = max(h["cells"], key=lambda c: c["max_ns"], default=None)
        return sum(c["count"] for c in h["cells"]), top and (top["max_ns"], top["max_ref"])

    assert binned(body) == binned(kept)
    return ({k: v for k, v in h.items() if k not in REBINNED} for h in (body, kept))


def _without_added(body, kept):
    if isinstance(body, dict) and isinstance(kept, dict) and "lanes" in body and "total_lanes" in body:
        # a timeline's CPU tracks (derive/cpus.py; made at the open for the kept ftrace sources, after migration 3):
        # ranked after the devices and windows, so the kept lanes keep their order around them
        cpus = [lane for lane in body["lanes"] if lane["kind"] == "cpu"]
        body = {**body, "lanes": [lane for lane in body["lanes"] if lane["kind"] != "cpu"]}
        body["total_lanes"] -= len(cpus)
    if isinstance(body, dict) and isinstance(kept, dict):
        return {k: _without_added(v, kept.get(k)) for k, v in body.items() if k in kept or k not in ADDED_SINCE}
    if isinstance(body, list) and isinstance(kept, list) and len(body) == len(kept):
        return [_without_added(v, k) for v, k in zip(body, kept)]
    return body


def test_release_database_answers_as_it_did(release_store):
    kept = json.loads((FIXTURES / f"{RELEASE}.answers.json").read_text())
    assert len(kept["answers"]) > 40
    with TestClient(create_app(release_store, warm=False)) as client:
        for url, answer in kept["answers"].items():
            r = client.get(url)
            body, kept_body = _compared(r.json(), answer["body"])
            assert (r.status_code, body) == (answer["status"], kept_body), url


def _compared(body, kept) -> tuple:
    """The answer and the release's, as compared: without the fields added since, a heatmap without its bins."""
    body = _without_added(body, kept)
    if isinstance(body, dict) and isinstance(kept, dict) and "y_edges_ns" in kept and "cells" in kept:
        return _rebinned(body, kept)
    return body, kept


def test_release_database_is_migrated_to_the_current_version(release_store):
    from backend.schema import SCHEMA_VERSION
    from backend.schema.migrations import version_of

    con = release_store.cursor()
    try:
        assert SCHEMA_VERSION >= 1 and version_of(con) == SCHEMA_VERSION
        # the derive steps the migrations marked (migration 3's CPU tracks) ran at the open
        assert con.execute("SELECT count(*) FROM pending_derive").fetchall()[0][0] == 0
        assert con.execute("SELECT count(*) FROM tl_lanes WHERE kind = 'cpu'").fetchall()[0][0] > 0
    finally:
        con.close()


def test_a_pending_derive_step_runs_at_the_next_open(tmp_path):
    """A mark left by a migration (the process stopped before the step ran) is run when the file is next opened."""
    from backend.derive.pipeline import DERIVE_MIGRATED
    from backend.schema.migrations import CPU_TRACKS
    from backend.store import Store

    assert CPU_TRACKS in DERIVE_MIGRATED  # every step a migration marks is declared
    store = Store(tmp_path / "a.duckdb")
    store.db.execute("INSERT INTO pending_derive VALUES (?)", [CPU_TRACKS])
    store.close()
    store = Store(tmp_path / "a.duckdb")
    try:
        assert store.db.execute("SELECT count(*) FROM pending_derive").fetchall()[0][0] == 0
    finally:
        store.close()


def test_a_newer_schema_is_refused(tmp_path):
    from backend.schema.migrations import SCHEMA_VERSION, NewerSchema

    store = Store(tmp_path / "db.duckdb")
    store.db.execute("UPDATE schema_version SET version = ?", [SCHEMA_VERSION + 1])
    store.close()
    with pytest.raises(NewerSchema, match="newer than this Stallscope"):
        Store(tmp_path / "db.duckdb")


def test_openapi_document_matches_the_backend(tmp_path):
    """frontend/openapi.json (which frontend/src/api/schema.d.ts is generated from) is the backend's: `make openapi`
    regenerates both after a change of the API."""
    store = Store(tmp_path / "db.duckdb")
    try:
        served = create_app(store, warm=False).openapi()
    finally:
        store.close()
    kept = json.loads((FIXTURES.parents[1] / "frontend" / "openapi.json").read_text())
    assert json.loads(json.dumps(served)) == kept, "frontend/openapi.json is out of date: run `make openapi`"


def test_release_database_answers_as_it_did_from_its_stored_first_views(release_store):
    """The warm-up stores the first views of a file written before they were (first_views.precompute); read from
    the table, every answer is still the release's."""
    from backend.cache import AnalysisCache
    from backend.queries import first_views

    con = release_store.cursor()
    try:
        ids = [aid for (aid,) in con.execute("SELECT id FROM analyses ORDER BY id").fetchall()]
    finally:
        con.close()
    for aid in ids:
        first_views.precompute(release_store.db, AnalysisCache(), aid)
    con = release_store.cursor()
    try:
        assert con.execute("SELECT count(*) FROM first_views").fetchall()[0][0] == len(ids) * len(first_views.STEPS)
    finally:
        con.close()
    # a server start (a new app's cache): the answers come from the table
    kept = json.loads((FIXTURES / f"{RELEASE}.answers.json").read_text())
    with TestClient(create_app(release_store, warm=False)) as client:
        for url, answer in kept["answers"].items():
            r = client.get(url)
            body, kept_body = _compared(r.json(), answer["body"])
            assert (r.status_code, body) == (answer["status"], kept_body), url
