"""What the server remembers of an analysis (backend/cache/: one AnalysisCache on app.state) and how it forgets it:
after a PATCH of a clock offset no layer (kept answers, heatmap indexes, response bodies, stored first views) answers
from before, and after a DELETE nothing of the analysis is kept or answered."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.cache import AnalysisCache
from backend.queries import first_views
from tests.conftest import SAMPLES
from tests.test_first_views import first_urls

INCIDENT = [SAMPLES / f"incident.{k}.txt" for k in ("blkparse", "trace-cmd-report", "offcputime")]


def _upload(c: TestClient) -> dict:
    files = [("files", (p.name, p.read_bytes())) for p in INCIDENT]
    r = c.post("/api/analyses", files=files)
    assert r.status_code == 201, r.text
    return r.json()


def _reads(aid: str, span: tuple[int, int]) -> list[str]:
    """The page's first requests, and zooms that build and read the in-memory indexes and summaries."""
    a = f"/api/analyses/{aid}"
    lo, hi = span
    mid = (lo + hi) // 2
    return [
        *first_urls(aid),
        f"{a}/heatmap?metric=i2d&t0_ns={lo}&t1_ns={mid}",
        f"{a}/heatmap?metric=wait&t0_ns={lo}&t1_ns={hi}&x_bins=50",
        f"{a}/heatmap/events?metric=i2d&t0_ns={lo}&t1_ns={mid}&limit=20",
        f"{a}/timeline?width_px=900&t0_ns={lo}&t1_ns={mid}",
        f"{a}/waits?order=start&limit=50",
        f"{a}/dispatch-summary?by=device&t0_ns={lo}&t1_ns={mid}",
    ]


def _uploaded_and_read(c: TestClient) -> tuple[dict, list[str], dict[str, bytes]]:
    """An analysis uploaded and every read of _reads made once: (the upload's answer, the urls, their bodies)."""
    created = _upload(c)
    detail = c.get(f"/api/analyses/{created['id']}").json()
    urls = _reads(created["id"], (detail["t_min_ns"], detail["t_max_ns"]))
    return {**created, "sources": detail["sources"]}, urls, _bodies(c, urls)


def _bodies(c: TestClient, urls: list[str]) -> dict[str, bytes]:
    out = {}
    for u in urls:
        r = c.get(u)
        assert r.status_code == 200, (u, r.text[:200])
        out[u] = r.content
    return out


def test_after_a_patch_no_layer_answers_from_before(store):
    with TestClient(create_app(store, warm=False), base_url="http://127.0.0.1") as c:
        created, urls, before = _uploaded_and_read(c)
        aid = created["id"]
        cache: AnalysisCache = c.app.state.cache
        kept = cache.kept_of(aid)
        assert kept["answers"] and kept["indexes"] and kept["bodies"] >= len(urls)  # every layer holds something
        assert _bodies(c, urls) == before  # and answers from it
        ftrace = next(s for s in created["sources"] if s["format"] == "ftrace")
        r = c.patch(
            f"/api/analyses/{aid}/sources/{ftrace['id']}",
            json={"clock_offset_ns": ftrace["clock_offset_ns"] + 1_000_000_000},
            headers={"X-Edit-Key": created["edit_key"]},
        )
        assert r.status_code == 200, r.text
        assert cache.kept_of(aid) == {"answers": 0, "indexes": 0, "bodies": 0}
        after = _bodies(c, urls)
    # what a server that never saw the analysis before the PATCH answers (a new cache; the stored views the PATCH
    # kept, those that hold no time, are read by both)
    with TestClient(create_app(store, warm=False), base_url="http://127.0.0.1") as fresh:
        assert _bodies(fresh, urls) == after
    moved = [u for u in urls if after[u] != before[u]]
    assert f"/api/analyses/{aid}/timeline?width_px=1200&max_lanes=40" in moved  # the times moved by 1 s
    assert any("heatmap?metric=wait&t0_ns" in u for u in moved)


def test_after_a_delete_nothing_is_kept_or_answered(store):
    with TestClient(create_app(store, warm=False), base_url="http://127.0.0.1") as c:
        created, urls, _ = _uploaded_and_read(c)
        aid = created["id"]
        r = c.delete(f"/api/analyses/{aid}", headers={"X-Edit-Key": created["edit_key"]})
        assert r.status_code == 204
        assert c.app.state.cache.kept_of(aid) == {"answers": 0, "indexes": 0, "bodies": 0}
        assert all(c.get(u).status_code == 404 for u in urls)
        con = store.cursor()
        try:
            assert con.execute("SELECT count(*) FROM first_views WHERE analysis_id = ?", [aid]).fetchall()[0][0] == 0
        finally:
            con.close()


def test_a_read_never_writes_the_stored_views(store):
    """Reads compute what is not stored (a file written before the views were) and keep it in memory only: the
    table is written by precompute alone."""
    with TestClient(create_app(store, warm=False), base_url="http://127.0.0.1") as c:
        aid = _upload(c)["id"]
        con = store.cursor()
        try:
            con.execute("DELETE FROM first_views")
            c.app.state.cache.forget()
            _bodies(c, first_urls(aid))
            assert con.execute("SELECT count(*) FROM first_views").fetchall()[0][0] == 0
            done = first_views.precompute(c.app.state.store.db, c.app.state.cache, aid)
            assert set(done) and con.execute("SELECT count(*) FROM first_views").fetchall()[0][0] == len(done)
        finally:
            con.close()
