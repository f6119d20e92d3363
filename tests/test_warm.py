"""The warm-up (backend/warm.py): an app started on a database reads the stored first views of its newest analyses and
then builds what their zooms read, without a request; a request made while the warm-up computes what it needs waits
for that computation and gets the same answer; an uploaded analysis is warmed once its response is sent; an analysis
whose source's clock offset changed, or of a file without stored first views, gets them computed and stored."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fastapi.testclient import TestClient

from backend import warm
from backend.app import create_app
from backend.cache import AnalysisCache
from backend.queries import first_views, heatindex, stalls
from backend.queries import heatmaps as heatmap
from backend.queries import requests as blk
from tests.conftest import SAMPLES, ingest_paths

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
INCIDENT = [SAMPLES / n for n in ("incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt")]


def kept(cache, aid: str) -> set[str]:
    """What the app's cache holds of this analysis (kinds of answers; 'index i2d' for the Dispatch heatmap's)."""
    out = {k[1] for k in cache.answers.keys() if k[0] == aid}
    return out | {"index i2d" for k in cache.indexes.keys() if k == (aid, "i2d", None, None, None)}


@pytest.fixture(autouse=True)
def quick_indexes(monkeypatch):
    """The warm-up's second phase (the indexes) after 0.2 s without a request, not INDEX_QUIET_S."""
    monkeypatch.setattr(warm, "INDEX_QUIET_S", 0.2)


def test_start_fills_the_caches_of_the_newest_analyses(store, monkeypatch):
    monkeypatch.setattr(warm, "NEWEST", 1)
    old = ingest_paths(store, DEMO)["id"]
    new = ingest_paths(store, *INCIDENT)["id"]
    with TestClient(create_app(store)) as c:  # a server start: nothing in memory, the first views in the file
        assert c.app.state.warmer.wait(120)
        assert {
            "index i2d",
            "latency-over-time",
            "dispatch-summary",
            "timeline-summary",
            "heatmap-metrics",
            "chains",
            "waits-page",
            "flamegraph",
            "capabilities",
        } <= kept(c.app.state.cache, new)
        assert kept(c.app.state.cache, old) == set()  # beyond the newest NEWEST
        assert list(c.app.state.warmer.warmed[new]) == [name for name, _ in (*warm.STEPS, *warm.INDEXES)]
        # what the first requests get is what they would have computed
        con = store.cursor()
        btt = blk.btt_rows(con, AnalysisCache(), new, "process")  # the whole trace's summary carries btt's figures
        computed = [{**g, "btt": btt.get(g["pid"], [])} for g in blk.dispatch_sql(con, AnalysisCache(), new, "process")]
        assert c.get(f"/api/analyses/{new}/dispatch-summary").json() == json.loads(json.dumps(computed))
        con.close()


def test_a_request_during_the_warm_up_waits_for_its_computation(store, monkeypatch):
    aid = ingest_paths(store, DEMO)["id"]
    started, release, builds = threading.Event(), threading.Event(), []
    build = heatindex.build

    def held(table):  # the warm-up's build of the heatmap index (its second phase) holds until released
        builds.append(threading.current_thread().name)
        started.set()
        assert release.wait(60)
        return build(table)

    monkeypatch.setattr(heatindex, "build", held)
    con = store.cursor()
    lo, hi = con.execute("SELECT min(i_ns), max(i_ns) FROM blk_requests").fetchall()[0]
    con.close()
    t0, t1 = lo + (hi - lo) // 4, lo + (hi - lo) // 2  # a zoom: read from the index
    with TestClient(create_app(store)) as c:
        warmer = c.app.state.warmer
        assert started.wait(60)
        got = {}
        url = f"/api/analyses/{aid}/heatmap?metric=i2d&x_bins=120&y_bins=40&t0_ns={t0}&t1_ns={t1}"
        request = threading.Thread(target=lambda: got.update(r=c.get(url)))
        request.start()
        deadline = time.monotonic() + 30
        while not warmer._busy and time.monotonic() < deadline:  # the request is in flight
            time.sleep(0.01)
        time.sleep(0.3)
        assert "r" not in got  # still waiting for the warm-up's build
        release.set()
        request.join(60)
        assert got["r"].status_code == 200
        assert builds == ["stallscope-warm"]  # built once, by the warm-up
        con = store.cursor()
        assert got["r"].json() == json.loads(json.dumps(heatmap.heatmap_sql(con, aid, "i2d", 120, 40, t0=t0, t1=t1)))
        con.close()
        assert warmer.wait(60) and aid in warmer.warmed


def test_an_upload_is_warmed_after_its_response(client):
    assert client.app.state.warmer.wait(60)
    upload = INCIDENT[0]  # under the client's upload limit (1 MiB)
    with open(upload, "rb") as f:
        r = client.post("/api/analyses", files=[("files", (upload.name, f))])
    assert r.status_code == 201
    aid = r.json()["id"]
    assert client.app.state.warmer.wait(120)
    assert {"index i2d", "dispatch-summary", "latency-over-time"} <= kept(client.app.state.cache, aid)


def stored_views(store, aid: str) -> dict[str, tuple[bool, bytes]]:
    """key -> (timed, body) of the analysis' stored first views."""
    con = store.cursor()
    try:
        rows = con.execute("SELECT key, timed, body FROM first_views WHERE analysis_id = ?", [aid]).fetchall()
        return {k: (timed, bytes(b)) for k, timed, b in rows}
    finally:
        con.close()


def test_an_analysis_is_warmed_again_after_a_source_moved(store):
    """A new clock offset drops what was kept of the analysis and its stored views that hold times or chains: the
    warm-up computes and stores them again, with the new offset, once the response is sent."""
    aid = ingest_paths(store, *INCIDENT)["id"]
    before = stored_views(store, aid)
    assert len(before) == len(first_views.STEPS)
    with TestClient(create_app(store)) as c:
        warmer = c.app.state.warmer
        assert warmer.wait(120) and {"chains", "timeline-summary", "dispatch-summary"} <= kept(c.app.state.cache, aid)
        ftrace = next(s for s in c.get(f"/api/analyses/{aid}").json()["sources"] if s["format"] == "ftrace")
        moved = ftrace["clock_offset_ns"] + 1_000_000
        r = c.patch(f"/api/analyses/{aid}/sources/{ftrace['id']}", json={"clock_offset_ns": moved})
        assert r.status_code == 200
        assert warmer.wait(120)
        assert {"chains", "timeline-summary", "dispatch-summary"} <= kept(c.app.state.cache, aid)
        after = stored_views(store, aid)
        untimed = {k: v for k, v in before.items() if not v[0]}  # kept as they were: they hold no time
        assert untimed == {k: v for k, v in after.items() if not v[0]}
        assert {"flamegraph", "dispatch-summary", "heatmap-metrics"} <= {json.loads(k)[0] for k in untimed}
        timed = set(after) - set(untimed)
        assert len(timed) == len(before) - len(untimed) and "chains" in {json.loads(k)[0] for k in timed}
        assert all([ftrace["id"], moved] in json.loads(k)[-1] for k in timed)  # stored under the new offsets
        con = store.cursor()  # with the new offset, computed without the stored answers
        con.begin()
        con.execute("DELETE FROM first_views")
        assert c.get(f"/api/analyses/{aid}/chains?limit=100").json() == json.loads(
            json.dumps(stalls.first_chains(con, AnalysisCache(), aid, 100), default=str)
        )
        con.rollback()
        con.close()


def test_a_file_without_stored_views_gets_them_from_the_warm_up(store):
    """A file written before the first views were stored (or whose ingest could not store them): the warm-up
    computes and stores them; the answers are the same as before."""
    aid = ingest_paths(store, *INCIDENT)["id"]
    before = stored_views(store, aid)
    con = store.cursor()
    con.execute("DELETE FROM first_views")
    con.close()
    with TestClient(create_app(store)) as c:
        assert c.app.state.warmer.wait(120)
    assert stored_views(store, aid) == before


def test_the_first_requests_parameters_are_the_frontends():
    """first_views.FIRST holds what the frontend's first requests ask for; here read from the frontend's sources (a
    change on either side without the other would store answers no request asks for)."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "frontend" / "src"

    def one(path: str, pattern: str) -> str:
        found = re.findall(pattern, (src / path).read_text())
        assert len(found) == 1, (path, pattern, found)
        return found[0]

    got = {
        name: int(one("api/tabQueries.ts", rf"export const {name} = (\d+);"))
        for name in ("HEATMAP_X_BINS", "HEATMAP_Y_BINS", "LATENCY_BUCKETS", "REQUESTS_LIMIT", "TIMELINE_WIDTH_PX")
    }
    default_view = (src / "state/viewState.ts").read_text().split("DEFAULT_VIEW", 1)[1].split("};", 1)[0]
    got |= {k: re.search(rf"\b{k}: '?(\w+)'?,", default_view).group(1) for k in ("hm", "by", "tlN")}
    got |= {k: re.search(rf"\b{k}: '?(\w+)'?,", default_view).group(1) for k in ("order",)}
    got["tlN"] = int(got["tlN"])
    got["chains"] = int(
        one("api/queries.ts", r"/chains', \{ params: \{ path: \{ analysis_id: id \}, query: \{ limit: (\d+)")
    )
    got["heatmap metrics"] = int(
        one("api/queries.ts", r"export function useHeatmapMetrics\(id: string, limit = (\d+)(?:, idle = false)?\)")
    )
    got["waits"] = int(one("views/stalls/WaitsPanel.tsx", r"useWaitsPage\(analysis\.id, \{[^}]*\}, (\d+),"))
    got["offcpu tasks"] = int(
        one("api/queries.ts", r"/offcpu-tasks', \{ params: \{ path: \{ analysis_id: id \}, query: \{ limit: (\d+)")
    )
    assert got == first_views.FIRST
