"""One error body, declared (issue 34): every 4xx and 5xx the API answers is an ErrorBody ({detail, errors?, files?},
backend/api/models.py), and the OpenAPI document declares it, as JSON, for each status each operation answers (the
routers declare them: backend/api/deps.py error_responses). OPTIONS and 405 answers list every method of the path.
tests/test_fuzz_api.py checks the same of generated requests (schemathesis' conformance checks)."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient

from backend.access import Access
from backend.app import create_app
from backend.store import Store
from tests.conftest import SAMPLES, ingest_paths

ANALYSIS = "/api/analyses/{analysis_id}"
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
TOKEN = "t0ken-of-the-team-server-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("errors") / "errors.duckdb")
    created = ingest_paths(store, SAMPLES / "cfq-dispatch-starvation.blkparse.txt")
    app = create_app(store, warm=False, access=Access())
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c, created, app.openapi()
    store.close()


@pytest.fixture(scope="module")
def schema(served):
    return schemathesis.openapi.from_dict(served[2])


def _declared(doc: dict, path: str, method: str, status: int) -> dict:
    responses = doc["paths"][path][method]["responses"]
    assert str(status) in responses, f"{method.upper()} {path} does not declare {status}: {sorted(responses)}"
    return responses[str(status)]


def _conforms(schema, doc: dict, path: str, method: str, r) -> dict:
    """The answer is one the document declares for the operation: its status, JSON, and its body an ErrorBody."""
    declared = _declared(doc, path, method, r.status_code)
    assert r.headers["content-type"] == "application/json", r.headers
    assert list(declared["content"]) == ["application/json"], declared
    assert declared["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    schema[path][method.upper()].validate_response(r)  # raises when the body is not the declared schema
    body = r.json()
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


def test_every_operation_declares_an_error_body_for_each_error(served):
    doc = served[2]
    assert "HTTPValidationError" not in doc["components"]["schemas"]  # FastAPI's own 422 (a list): never answered
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            errors = {s: r for s, r in op["responses"].items() if int(s) >= 400}
            assert {"400", "500"} <= set(errors), (method, path, sorted(errors))  # any Host refused, any defect
            if op.get("parameters") or op.get("requestBody"):
                assert "422" in errors, (method, path)
            if "{analysis_id}" in path:
                assert {"404", "503"} <= set(errors), (method, path)
            if method != "get":
                assert "403" in errors, (method, path)  # a page of another origin (backend/access.py)
            if op.get("requestBody"):
                assert "408" in errors, (method, path)
            for status, r in errors.items():
                assert r["content"] == {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}, (
                    method,
                    path,
                    status,
                )
                assert r["description"], (method, path, status)


def test_a_422_from_validation_and_from_a_route_are_the_same_declared_shape(served, schema):
    c, created, doc = served
    aid, path = created["id"], ANALYSIS + "/timeline"
    # FastAPI's validation: each parameter's error in `errors`, and all of them in words in `detail`
    r = c.get(f"/api/analyses/{aid}/timeline?t1_ns=soon&width_px=0")
    assert r.status_code == 422
    body = _conforms(schema, doc, path, "get", r)
    assert body["detail"].startswith("invalid request: ") and "t1_ns" in body["detail"] and "width_px" in body["detail"]
    assert {tuple(e["loc"]) for e in body["errors"]} == {("query", "t1_ns"), ("query", "width_px")}, body
    assert all(e["msg"] and e["type"] for e in body["errors"])
    # a route's own 422 (HTTPException(422, ...)): the same shape, no `errors`
    r = c.get(f"/api/analyses/{aid}/timeline?t0_ns=20&t1_ns=10")
    assert r.status_code == 422
    assert "errors" not in _conforms(schema, doc, path, "get", r)
    sid = created["sources"][0]["id"]
    r = c.patch(f"/api/analyses/{aid}/sources/{sid}", json={})
    assert r.status_code == 422
    _conforms(schema, doc, ANALYSIS + "/sources/{source_id}", "patch", r)
    # a body that is not JSON
    r = c.post(f"/api/analyses/{aid}/query", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert _conforms(schema, doc, ANALYSIS + "/query", "post", r)["errors"][0]["type"] == "json_invalid"


def test_the_report_txt_404_is_declared_json(served, schema):
    c, created, doc = served
    path = ANALYSIS + "/chains/{rank}/report.txt"
    assert list(_declared(doc, path, "get", 200)["content"]) == ["text/plain"]
    for url in (f"/api/analyses/{created['id']}/chains/999999/report.txt", "/api/analyses/nope/chains/1/report.txt"):
        r = c.get(url)
        assert r.status_code == 404
        _conforms(schema, doc, path, "get", r)
    r = c.get(f"/api/analyses/{created['id']}/export/nothing.csv")
    assert r.status_code == 404
    _conforms(schema, doc, ANALYSIS + "/export/{filename}", "get", r)


def test_options_and_405_list_every_method_of_the_path(served):
    c, created, doc = served
    aid, sid = created["id"], created["sources"][0]["id"]
    r = c.options(f"/api/analyses/{aid}")
    assert r.status_code == 204 and r.headers["allow"] == "DELETE, GET, OPTIONS", r.headers
    r = c.put(f"/api/analyses/{aid}")
    assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET, OPTIONS", r.headers
    assert r.json() == {"detail": "Method Not Allowed"}
    # each path of the document: exactly its operations' methods (schemathesis' allow_header_conformance)
    values = {"analysis_id": aid, "source_id": sid, "b": sid, "line": 1, "rank": 1, "token": "t", "filename": "x.csv"}
    for path, operations in doc["paths"].items():
        r = c.options(path.format(**values))
        assert r.status_code == 204, (path, r.text)
        advertised = {m.strip().lower() for m in r.headers["allow"].split(",")}
        assert advertised - {"head", "options"} == set(operations) & METHODS, (path, r.headers["allow"])
    # no endpoint there: 404 whatever the method
    for method in ("OPTIONS", "POST", "DELETE"):
        r = c.request(method, "/api/no/such/thing")
        assert r.status_code == 404 and r.json()["detail"].startswith("no API endpoint /api/no/such/thing"), method


def test_the_middlewares_refusals_are_declared_error_bodies(served, schema, store):
    c, created, doc = served
    r = TestClient(c.app, base_url="http://rebind.attacker.example").get(f"/api/analyses/{created['id']}")
    assert r.status_code == 400
    _conforms(schema, doc, ANALYSIS, "get", r)
    r = c.delete(f"/api/analyses/{created['id']}", headers={"origin": "https://evil.example"})
    assert r.status_code == 403
    _conforms(schema, doc, ANALYSIS, "delete", r)
    # a shared server: the token missing (401, with its challenge) or an edit key not this analysis' (403)
    theirs = ingest_paths(store, SAMPLES / "cfq-dispatch-starvation.blkparse.txt")
    with TestClient(create_app(store, warm=False, access=Access(token=TOKEN)), base_url="http://127.0.0.1") as shared:
        r = shared.get("/api/analyses")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert _declared(doc, "/api/analyses", "get", 401)["headers"]["WWW-Authenticate"]["required"]
        _conforms(schema, doc, "/api/analyses", "get", r)
        r = shared.delete(f"/api/analyses/{theirs['id']}", headers={"X-Edit-Key": "not-the-key"})
        assert r.status_code == 403
        _conforms(schema, doc, ANALYSIS, "delete", r)


def test_no_read_hops_to_a_thread_for_its_dependencies():
    """A plain function dependency is called in a worker thread, a hop there and back through the event loop; on a
    busy server those hops took ~10 % of the interpreter lock (docs/BENCHMARKS.md, "Reads under ingest"). So every
    dependency of a GET route is a coroutine (the route itself runs in a thread)."""
    import inspect

    from fastapi.routing import APIRoute

    from backend.api.deps import _calls
    from backend.app import ROUTERS

    hops = set()
    for route in (r for resource in ROUTERS for r in resource.router.routes):
        if not isinstance(route, APIRoute) or "GET" not in route.methods:
            continue
        for dep in list(_calls(route.dependant))[1:]:
            call = dep.call
            run = call if inspect.isfunction(call) else getattr(call, "__call__", None)
            if not (inspect.iscoroutinefunction(run) or inspect.isasyncgenfunction(run)):
                hops.add(f"{route.path}: {getattr(call, '__name__', call)}")
    assert not hops, sorted(hops)
