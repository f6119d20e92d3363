"""Kept response bodies (backend/cache/bodies.py): a read of an analysis is answered again without running its route,
until the analysis changes (PATCH of an offset, DELETE, retention: AnalysisCache.forget); a read that was under way when it
changed is not kept; errors, other routes and bodies over the budget are not kept (issue 24, reads under load)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from backend.app import create_app
from backend.cache import AnalysisCache, ResponseCache
from tests.conftest import SAMPLES, ingest_paths


def _counting_app(cache: AnalysisCache, calls: list[str], on_call=None, status: int = 200, size: int = 10):
    async def read(request):
        calls.append(request.url.path + "?" + request.url.query)
        if on_call:
            on_call()
        return JSONResponse({"n": len(calls), "pad": "x" * size}, status_code=status)

    async def listing(request):
        calls.append("list")
        return JSONResponse([len(calls)])

    async def change(request):
        cache.forget(request.path_params["aid"])
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/api/analyses/{aid}/{rest:path}", read),
            Route("/api/analyses", listing),
            Route("/api/analyses/{aid}", change, methods=["DELETE"]),
        ]
    )


def test_a_read_is_answered_again_until_the_analysis_changes():
    calls: list[str] = []
    cache = AnalysisCache()
    c = TestClient(ResponseCache(_counting_app(cache, calls), cache))
    first = c.get("/api/analyses/AAA/timeline?width_px=100")
    assert c.get("/api/analyses/AAA/timeline?width_px=100").content == first.content
    assert first.headers["content-type"] == "application/json"
    assert len(calls) == 1
    c.get("/api/analyses/AAA/timeline?width_px=200")  # other parameters: another body
    c.get("/api/analyses/BBB/timeline?width_px=100")  # another analysis
    assert len(calls) == 3
    assert c.delete("/api/analyses/AAA").status_code == 204  # cache.forget("AAA")
    assert c.get("/api/analyses/AAA/timeline?width_px=100").json()["n"] == 4
    assert c.get("/api/analyses/BBB/timeline?width_px=100").json()["n"] == 3  # BBB's kept body
    c.get("/api/analyses")
    c.get("/api/analyses")
    assert calls.count("list") == 2  # the list is not an analysis' read


def test_a_query_naming_another_analysis_follows_its_changes():
    calls: list[str] = []
    cache = AnalysisCache()
    c = TestClient(ResponseCache(_counting_app(cache, calls), cache))
    c.get("/api/analyses/AAA/flamegraph-diff?b_analysis=CCC")
    c.get("/api/analyses/AAA/flamegraph-diff?b_analysis=CCC")
    assert len(calls) == 1
    cache.forget("CCC")
    c.get("/api/analyses/AAA/flamegraph-diff?b_analysis=CCC")
    assert len(calls) == 2


def test_a_read_under_way_when_the_analysis_changed_is_not_kept():
    calls: list[str] = []
    cache = AnalysisCache()
    c = TestClient(ResponseCache(_counting_app(cache, calls, on_call=lambda: cache.forget("DDD")), cache))
    c.get("/api/analyses/DDD/chains")
    c.get("/api/analyses/DDD/chains")
    assert len(calls) == 2


def test_errors_and_large_bodies_are_not_kept():
    calls: list[str] = []
    cache = AnalysisCache()
    c = TestClient(ResponseCache(_counting_app(cache, calls, status=503), cache))
    c.get("/api/analyses/EEE/chains")
    c.get("/api/analyses/EEE/chains")
    assert len(calls) == 2
    calls.clear()
    cache = AnalysisCache(max_body=4000)
    c = TestClient(ResponseCache(_counting_app(cache, calls, size=5000), cache))
    body = c.get("/api/analyses/EEE/chains").json()
    assert len(body["pad"]) == 5000
    c.get("/api/analyses/EEE/chains")
    assert len(calls) == 2


def test_the_budget_drops_the_least_recently_used():
    calls: list[str] = []
    cache = AnalysisCache(body_bytes=3500)
    c = TestClient(ResponseCache(_counting_app(cache, calls, size=1000), cache))
    for k in range(3):
        c.get(f"/api/analyses/FFF/r{k}")
    c.get("/api/analyses/FFF/r0")  # kept, and now the most recently used
    c.get("/api/analyses/FFF/r3")  # drops r1
    assert len(calls) == 4 and cache.bodies.used_bytes() <= 3500
    c.get("/api/analyses/FFF/r0")
    c.get("/api/analyses/FFF/r2")
    assert len(calls) == 4
    c.get("/api/analyses/FFF/r1")
    assert len(calls) == 5


def test_the_app_answers_a_patch_and_a_delete_with_new_bodies(store):
    a = ingest_paths(store, *[SAMPLES / n for n in ("incident.blkparse.txt", "incident.trace-cmd-report.txt")])
    path = f"/api/analyses/{a['id']}"
    with TestClient(create_app(store, warm=False)) as c:
        before = c.get(path).json()
        timeline = c.get(f"{path}/timeline?width_px=800").content
        assert c.get(path).json() == before
        assert c.get(f"{path}/timeline?width_px=800").content == timeline
        src = before["sources"][0]
        r = c.patch(f"{path}/sources/{src['id']}", json={"clock_offset_ns": src["clock_offset_ns"] + 1_000_000_000})
        assert r.status_code == 200, r.text
        after = c.get(path).json()
        assert after["sources"][0]["clock_offset_ns"] == src["clock_offset_ns"] + 1_000_000_000
        assert c.get(f"{path}/timeline?width_px=800").content != timeline
        assert c.delete(path).status_code == 204
        assert c.get(path).status_code == 404
        assert json.loads(c.get(f"{path}/timeline?width_px=800").content)["detail"]
