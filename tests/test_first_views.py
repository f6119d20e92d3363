"""The first views stored at ingest (queries/first_views.py, queries/stored.py): on real captures, each stored answer is
byte for byte what its route computes without it; after a server start the first requests read them (they answer
without computing); a file without them answers the same by computing."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from backend import warm
from backend.app import create_app
from backend.cache import AnalysisCache
from backend.queries import capabilities, first_views, heatmaps, offcpu, requests, stalls, timeline
from backend.queries.catalogue import offsets_now
from tests.conftest import PUBLIC, SAMPLES, ingest_paths, needs_public

# real captures of every format the first views read: the samples (each alone, and the incident's three files as
# one analysis: block requests, function_graph with waits and chains, off-CPU stacks) and public ones
CAPTURES = {
    **{p.name: [p] for p in sorted(SAMPLES.glob("*.txt"))},
    "incident": [SAMPLES / f"incident.{k}.txt" for k in ("blkparse", "trace-cmd-report", "offcputime")],
    **{
        f"public/{p.parent.name}/{p.name}": [p]
        for p in (
            PUBLIC / "blkparse-text/derived-liuzel01-sda-lvm.blkparse.txt",
            PUBLIC / "blkparse-text/oxdeadmeat-nvme0n1-dmcrypt.blkparse.txt",
            PUBLIC / "ftrace-funcgraph/langraph-tracefs-events-record-tgid.log",
            PUBLIC / "ftrace-funcgraph/perf-tools-funcgraph-default-ctxswitch.txt",
            PUBLIC / "trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt",
            PUBLIC / "offcputime/bcc-offcputime-K-default-stacks.txt",
            PUBLIC / "offwaketime/bcc-offwaketime_example.txt",
        )
    },
    "public/blktrace-binary/liuzel01-sda": sorted((PUBLIC / "blktrace-binary/liuzel01-sda").glob("*")),
}


def views(con, aid: str) -> dict[str, tuple[bool, bytes]]:
    """key -> (timed, body) of the analysis' rows of first_views."""
    rows = con.execute("SELECT key, timed, body FROM first_views WHERE analysis_id = ?", [aid]).fetchall()
    return {k: (timed, bytes(b)) for k, timed, b in rows}


def computed(con, aid: str) -> dict[str, tuple[bool, bytes]]:
    """The first views as a request computes them without stored answers (nothing kept in memory, no row in the
    table: deleted in a transaction rolled back after; a whole heatmap from the index, not the SQL the storing
    uses; the timeline from its whole summaries, not the levels the storing reads), keyed as they would be stored:
    a request's cache (not `storing`) that records what the queries answered."""
    cache = AnalysisCache()
    cache.recorded = []
    con.begin()
    try:
        con.execute("DELETE FROM first_views WHERE analysis_id = ?", [aid])
        for _, call in first_views.STEPS:
            call(con, cache, aid)
    finally:
        con.rollback()
    return {
        text: (timed, body.encode() if isinstance(body, str) else body) for _, _, text, timed, body in cache.recorded
    }


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=needs_public) if n.startswith("public/") else n for n in CAPTURES]
)
def test_each_stored_view_is_the_answer_computed_fresh(store, name):
    aid = ingest_paths(store, *CAPTURES[name])["id"]
    con = store.cursor()
    try:
        kept = views(con, aid)
        assert len(kept) == len(first_views.STEPS)  # each step its own key, none failed
        assert kept == computed(con, aid)
        # every view holding times or chains is keyed by the offsets
        now = json.loads(json.dumps(offsets_now(con, aid)))
        assert all((json.loads(k)[-1] == now) == timed for k, (timed, _) in kept.items())
    finally:
        con.close()


def first_urls(aid: str) -> list[str]:
    """The first requests of each tab, with the frontend's parameters (first_views.FIRST)."""
    f = first_views.FIRST
    a = f"/api/analyses/{aid}"
    return [
        f"{a}/timeline?width_px={f['TIMELINE_WIDTH_PX']}&max_lanes={f['tlN']}",
        f"{a}/capabilities",
        f"{a}/latency-over-time?buckets={f['LATENCY_BUCKETS']}",
        f"{a}/heatmap?metric={f['hm']}&x_bins={f['HEATMAP_X_BINS']}&y_bins={f['HEATMAP_Y_BINS']}",
        f"{a}/dispatch-summary?by={f['by']}",
        f"{a}/requests/page?order={f['order']}&limit={f['REQUESTS_LIMIT']}",
        f"{a}/chains?limit={f['chains']}",
        f"{a}/waits/page?limit={f['waits']}",
        f"{a}/marks",
        f"{a}/heatmap/metrics?limit={f['heatmap metrics']}",
        f"{a}/heatmap?metric=wait&x_bins={f['HEATMAP_X_BINS']}&y_bins={f['HEATMAP_Y_BINS']}",
        f"{a}/offcpu-tasks?limit={f['offcpu tasks']}",
        f"{a}/flamegraph?unit=us&invert=false",
    ]


def test_after_a_start_the_first_requests_read_the_stored_answers(store, monkeypatch):
    aid = ingest_paths(store, *CAPTURES["incident"])["id"]
    computing = (
        (requests, "latency_sql"),
        (requests, "_with_btt"),
        (requests, "requests"),
        (heatmaps, "_heatmap"),
        (heatmaps, "_metrics"),
        (timeline, "timeline"),
        (capabilities, "_capabilities"),
        (stalls, "chains"),
        (stalls, "waits"),
        (stalls, "_marks"),
        (offcpu, "_tasks"),
        (offcpu, "flamegraph"),
    )
    with TestClient(create_app(store, warm=False), base_url="http://127.0.0.1") as c:
        assert c.app.state.cache.answers.used_bytes() == 0  # a server start: nothing in memory
        with monkeypatch.context() as m:
            for module, name in computing:

                def fail(*a, _name=name, **k):
                    raise AssertionError(f"{_name} computed: the stored answer was not read")

                m.setattr(module, name, fail)
            read = {u: c.get(u) for u in first_urls(aid)}
        assert all(r.status_code == 200 for r in read.values()), {u: r.text for u, r in read.items()}
        # the same requests answered by computing, as a file without stored first views is
        con = store.cursor()
        con.execute("DELETE FROM first_views")
        con.close()
        c.app.state.cache.forget()
        fresh = {u: c.get(u) for u in first_urls(aid)}
        assert {u: r.content for u, r in read.items()} == {u: r.content for u, r in fresh.items()}
        assert json.loads(read[first_urls(aid)[6]].content)  # the incident has chains: not an empty answer


def test_a_deleted_analysis_leaves_no_view(client):
    upload = SAMPLES / "incident.blkparse.txt"
    with open(upload, "rb") as f:
        r = client.post("/api/analyses", files=[("files", (upload.name, f))])
    assert r.status_code == 201
    aid = r.json()["id"]
    store = client.app.state.store
    con = store.cursor()
    try:
        assert len(views(con, aid)) == len(first_views.STEPS)
        assert client.delete(f"/api/analyses/{aid}", headers={"X-Edit-Key": r.json()["edit_key"]}).status_code == 204
        assert views(con, aid) == {}
    finally:
        con.close()


def test_a_heatmap_past_the_index_is_stored_by_the_warm_up(store, monkeypatch):
    """A heatmap read from the grid summary (more events than an index holds) is left to the server at ingest (its
    build would pass the ingest's memory bound): the warm-up stores it, as the route computes it."""
    monkeypatch.setattr(heatmaps, "INDEX_MAX_EVENTS", 10)
    monkeypatch.setattr(warm, "INDEX_QUIET_S", 0.2)
    aid = ingest_paths(store, *CAPTURES["incident"])["id"]
    con = store.cursor()
    try:
        kept = views(con, aid)
        with TestClient(create_app(store), base_url="http://127.0.0.1") as c:
            assert c.app.state.warmer.wait(120)
        done = views(con, aid)
        assert len(done) == len(first_views.STEPS) and kept.items() <= done.items()
        left = [json.loads(k)[:2] for k in set(done) - set(kept)]  # the incident has more than 10 requests
        assert ["heatmap", "i2d"] in left and all(k[0] == "heatmap" for k in left)
        assert done == computed(con, aid)
    finally:
        con.close()
