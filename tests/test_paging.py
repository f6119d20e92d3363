"""Cursor paging of /requests/page, /waits/page and /calls on real captures: walking every page gives each row of
the unpaged list exactly once, in its order, under every sort and filter; a cursor that the list did not make is a
422 that says so, never a 500."""

from __future__ import annotations

import base64
import collections
import json

import pytest

from tests.conftest import PUBLIC, SAMPLES, ingest_paths, needs_public

pytestmark = needs_public  # every test reads `real`
BLK = PUBLIC / "blkparse-text" / "derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt"  # 1168 requests, 8 CPUs
SCHED = PUBLIC / "trace-cmd-report" / "derived-elainecole-report-sched_switch.txt"  # 2585 waits
FUNCGRAPH = PUBLIC / "ftrace-funcgraph" / "packt-lkd-ping-funcgraph-latency-format.txt"  # 1987 calls
INCIDENT = ["incident.blkparse.txt", "incident.trace-cmd-report.txt"]


@pytest.fixture
def real(store):
    """One analysis of three public captures (block requests, sched waits, function_graph calls: three sources,
    so the times of each are moved by its own clock offset), and another analysis."""
    a = ingest_paths(store, BLK, SCHED, FUNCGRAPH)["id"]
    b = ingest_paths(store, *(SAMPLES / n for n in INCIDENT))["id"]
    return a, b


def _walk(client, url: str, params: dict, items: str = "items") -> tuple[list, int]:
    """Every row of every page, in order, and how many pages it took."""
    rows, cursor, pages = [], None, 0
    while True:
        r = client.get(url, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body[items]) <= params["limit"]
        rows += body[items]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            return rows, pages
        assert body[items], "a page with a next cursor holds rows"
        assert pages < 10_000


def _ids(rows) -> list[tuple[int, int]]:
    return [(r["source_id"], r["line"]) for r in rows]


def _once(rows) -> None:
    counts = collections.Counter(_ids(rows))
    assert max(counts.values(), default=1) == 1, [k for k, n in counts.items() if n > 1][:5]


def _request_filters(client, a):
    whole = client.get(f"/api/analyses/{a}/requests", params={"order": "time", "limit": 10000}).json()
    mid = whole[len(whole) // 3]["d_ns"] or whole[len(whole) // 3]["c_ns"]
    devs = collections.Counter(r["dev"] for r in whole)
    pids = collections.Counter(r["pid"] for r in whole if r["pid"] is not None)
    return [
        {},
        {"dev": devs.most_common(1)[0][0]},
        {"pid": pids.most_common(1)[0][0]},
        {"t0_ns": whole[0]["q_ns"] or mid, "t1_ns": mid},
    ]


@pytest.mark.parametrize("order", ["i2d", "d2c", "q2c", "time"])
def test_request_pages_hold_every_request_once_in_order(client, real, order):
    a, _ = real
    for flt in _request_filters(client, a):
        unpaged = client.get(f"/api/analyses/{a}/requests", params={"order": order, "limit": 10000, **flt}).json()
        assert unpaged, flt
        for limit in (37, 100, 1000):  # 100: the first page from the slowest kept at ingest (blk_top), then the rest
            paged, pages = _walk(client, f"/api/analyses/{a}/requests/page", {"order": order, "limit": limit, **flt})
            _once(paged)
            assert paged == unpaged, (order, flt, limit)
            assert pages == max(1, -(-len(unpaged) // limit)), (pages, len(unpaged), limit)
    assert len(unpaged) >= 100 if not flt else True


def test_request_pages_are_the_whole_capture(client, store, real):
    a, _ = real
    con = store.cursor()
    try:
        want = con.execute(
            "SELECT count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ?", [a]
        ).fetchall()[0][0]
    finally:
        con.close()
    assert want == 1168  # the capture's requests: a golden of the blkparse text
    for order in ("i2d", "time"):
        paged, _ = _walk(client, f"/api/analyses/{a}/requests/page", {"order": order, "limit": 250})
        assert len(set(_ids(paged))) == len(paged) == want


@pytest.mark.parametrize("order", ["duration", "start"])
@pytest.mark.parametrize("idle", [False, True])
def test_wait_pages_hold_every_wait_once_in_order(client, real, order, idle):
    a, b = real
    for analysis, in_all in ((a, 2585), (b, 1133)):  # the sched_switch capture's waits; the incident's
        whole = client.get(f"/api/analyses/{analysis}/waits", params={"order": "start", "limit": 10000, "idle": True})
        whole = whole.json()
        assert len(whole) == in_all
        locks = collections.Counter(w["lock"] for w in whole if w["lock"])
        pid = collections.Counter(w["pid"] for w in whole).most_common(1)[0][0]
        mid = whole[len(whole) // 2]["start_ns"]
        filters = [{}, {"pid": pid}, {"t0_ns": mid, "t1_ns": whole[-1]["end_ns"]}]
        if locks:
            filters += [{"lock": "xfs"}, {"lock_key": "xfs_buf_lock"}]
        for flt in filters:
            params = {"order": order, "idle": idle, **flt}
            unpaged = client.get(f"/api/analyses/{analysis}/waits", params={**params, "limit": 10000}).json()
            assert unpaged or not (idle or analysis == b), flt
            for limit in (1, 41, 500):
                if limit == 1 and len(unpaged) > 300:
                    continue
                paged, _ = _walk(client, f"/api/analyses/{analysis}/waits/page", {**params, "limit": limit})
                _once(paged)
                assert paged == unpaged, (params, limit)


def test_call_pages_hold_every_call_once_in_order(client, store, real):
    a, b = real
    for analysis, in_all in ((a, 1987), (b, 11245)):
        con = store.cursor()
        try:
            pids = con.execute(
                "SELECT c.pid, count(*) FROM fg_calls c JOIN sources s ON s.id = c.source_id WHERE s.analysis_id = ?"
                " GROUP BY ALL ORDER BY 2 DESC",
                [analysis],
            ).fetchall()
        finally:
            con.close()
        assert sum(n for _, n in pids) == in_all
        for pid, n in pids[:3]:
            unpaged = client.get(f"/api/analyses/{analysis}/calls", params={"pid": pid, "limit": 20000}).json()
            assert len(unpaged["calls"]) == n and not unpaged["truncated"] and unpaged["next_cursor"] is None
            for limit in (97, 1000):
                paged, pages = _walk(
                    client, f"/api/analyses/{analysis}/calls", {"pid": pid, "limit": limit}, items="calls"
                )
                _once(paged)
                assert paged == unpaged["calls"]
                assert pages == max(1, -(-n // limit))
            first = client.get(f"/api/analyses/{analysis}/calls", params={"pid": pid, "limit": 97}).json()
            assert first["truncated"] == (n > 97) and (first["next_cursor"] is not None) == (n > 97)


def _forge(parts: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


def test_a_cursor_the_list_did_not_make_is_a_422_saying_so(client, real):
    a, b = real
    url = f"/api/analyses/{a}/requests/page"
    cur = client.get(url, params={"order": "i2d", "limit": 10}).json()["next_cursor"]
    assert cur
    ok = client.get(url, params={"order": "i2d", "limit": 10, "cursor": cur})
    assert ok.status_code == 200 and len(ok.json()["items"]) == 10
    waits_cur = client.get(f"/api/analyses/{a}/waits/page", params={"limit": 10}).json()["next_cursor"]
    b_cur = client.get(f"/api/analyses/{b}/requests/page", params={"order": "i2d", "limit": 10}).json()["next_cursor"]
    head = json.loads(base64.urlsafe_b64decode(cur + "=" * (-len(cur) % 4)))
    cases = {
        "!!not base64!!": "malformed cursor",
        "bm90IGpzb24": "malformed cursor",  # "not json"
        _forge({"a": 1}): "malformed cursor",
        _forge([99, "requests", head[2], 1, 2, 3]): "malformed cursor",  # another version
        _forge([*head[:3], "x", 2, 3]): "malformed cursor",  # a key that is not a number
        _forge([*head[:3], 1, 2]): "malformed cursor",  # a key too short
        _forge([*head[:3], 1, 2, 1 << 70]): "malformed cursor",  # beyond BIGINT
        _forge([*head[:3], 1, None, 3]): "malformed cursor",  # an id that is never null
        "A" * 600: "at most 512",
    }
    for bad, says in cases.items():
        r = client.get(url, params={"order": "i2d", "limit": 10, "cursor": bad})
        assert r.status_code == 422, (bad, r.text)
        assert says in json.dumps(r.json()["detail"]), (bad, r.json())
    foreign = {
        "another sort": (url, {"order": "d2c", "cursor": cur}, "another analysis, sort or filter"),
        "another filter": (url, {"order": "i2d", "dev": "8,0", "cursor": cur}, "another analysis, sort or filter"),
        "another analysis": (url, {"order": "i2d", "cursor": b_cur}, "another analysis, sort or filter"),
        "another list": (url, {"order": "i2d", "cursor": waits_cur}, "one of /waits, not of /requests"),
        "a list's cursor on calls": (f"/api/analyses/{a}/calls", {"pid": 1, "cursor": cur}, "not of /calls"),
    }
    for what, (u, params, says) in foreign.items():
        r = client.get(u, params={"limit": 10, **params})
        assert r.status_code == 422, (what, r.text)
        assert says in r.json()["detail"], (what, r.json())
    assert client.get("/api/analyses/nope/requests/page", params={"cursor": cur}).status_code == 404
    for bad_limit in (0, 5001):
        assert client.get(url, params={"limit": bad_limit}).status_code == 422
        assert client.get(f"/api/analyses/{a}/waits/page", params={"limit": bad_limit}).status_code == 422


def test_a_cursor_kept_across_a_moved_clock_is_a_422(client, store, real):
    """A time order's key is on the analysis timeline: after a source's clock offset changed, a cursor of it would
    start at another row, so it is refused; a duration order's key does not move, so its cursor still holds."""
    a, _ = real
    sources = {s["format"]: s["id"] for s in client.get(f"/api/analyses/{a}").json()["sources"]}
    by_time = client.get(f"/api/analyses/{a}/requests/page", params={"order": "time", "limit": 10}).json()
    by_i2d = client.get(f"/api/analyses/{a}/requests/page", params={"order": "i2d", "limit": 10}).json()
    waits = client.get(f"/api/analyses/{a}/waits/page", params={"order": "start", "limit": 10, "idle": True}).json()
    r = client.patch(f"/api/analyses/{a}/sources/{sources['blkparse']}", json={"clock_offset_ns": 123_456_789})
    assert r.status_code == 200, r.text
    again = client.get(
        f"/api/analyses/{a}/requests/page", params={"order": "time", "limit": 10, "cursor": by_time["next_cursor"]}
    )
    assert again.status_code == 422 and "clock offset changed" in again.json()["detail"]
    still = client.get(
        f"/api/analyses/{a}/requests/page", params={"order": "i2d", "limit": 10, "cursor": by_i2d["next_cursor"]}
    )
    assert still.status_code == 200 and len(still.json()["items"]) == 10
    w = client.get(
        f"/api/analyses/{a}/waits/page",
        params={"order": "start", "limit": 10, "idle": True, "cursor": waits["next_cursor"]},
    )
    assert w.status_code == 422
    # and the walk over the moved clock is whole again
    unpaged = client.get(f"/api/analyses/{a}/requests", params={"order": "time", "limit": 10000}).json()
    paged, _ = _walk(client, f"/api/analyses/{a}/requests/page", {"order": "time", "limit": 300})
    assert paged == unpaged
