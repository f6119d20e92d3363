"""Every response carries the headers that keep a trace's content from running as script or being framed."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.headers import CSP


def _client(store, tmp_path) -> TestClient:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text('<!doctype html><script type="module" src="/assets/app.js"></script>')
    (dist / "assets" / "app.js").write_text("export {}")
    return TestClient(create_app(store, static_dir=dist, warm=False))


def test_page_api_assets_and_errors_get_the_headers(store, tmp_path):
    with _client(store, tmp_path) as c:
        for path, status in [
            ("/", 200),
            ("/a/whatever", 200),
            ("/assets/app.js", 200),
            ("/api/analyses", 200),
            ("/api/analyses/nope", 404),
            ("/api/nothing-here", 404),
        ]:
            r = c.get(path)
            assert r.status_code == status, path
            assert r.headers["content-security-policy"] == CSP, path
            assert r.headers["x-content-type-options"] == "nosniff", path
            assert r.headers["x-frame-options"] == "DENY", path
            assert r.headers["referrer-policy"] == "no-referrer", path


def test_the_policy_allows_no_inline_or_foreign_script():
    directives = dict(d.split(" ", 1) for d in CSP.split("; "))
    assert directives["script-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"


def test_docs_pages_keep_working_without_the_policy(store, tmp_path):
    with _client(store, tmp_path) as c:
        r = c.get("/docs")
        assert r.status_code == 200
        assert "content-security-policy" not in r.headers
        assert r.headers["x-content-type-options"] == "nosniff"
