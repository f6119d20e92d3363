"""The access model (backend/access.py, docs/SECURITY.md): Host and Origin checked always; with STALLSCOPE_TOKEN set,
listing, uploading and changing need the token or an analysis' edit key, reading needs only the link."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.access import Access
from backend.app import create_app
from tests.conftest import SAMPLES

TOKEN = "t0ken-of-the-team-server-0123456789"
SAMPLE = SAMPLES / "cfq-dispatch-starvation.blkparse.txt"


def _client(store, access: Access, host: str = "127.0.0.1:8000") -> TestClient:
    return TestClient(create_app(store, warm=False, access=access), base_url=f"http://{host}")


def _upload(c: TestClient, headers: dict | None = None):
    with open(SAMPLE, "rb") as f:
        return c.post("/api/analyses", files=[("files", (SAMPLE.name, f))], headers=headers or {})


def _patch(c: TestClient, aid: str, sid: int, headers: dict | None = None):
    return c.patch(f"/api/analyses/{aid}/sources/{sid}", json={"clock_offset_ns": 1000}, headers=headers or {})


def test_defaults_answer_only_the_local_names(store):
    access = Access.from_env(env={})
    assert access.allowed_hosts == ("localhost", "127.0.0.1", "::1") and not access.shared
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST"):
        with _client(store, access, host) as c:
            assert c.get("/api/analyses").status_code == 200, host
    # DNS rebinding: a name the attacker controls, resolved to 127.0.0.1, reaches the server with that Host
    for host in ("rebind.attacker.example:8000", "127.0.0.1.attacker.example", "localhost.evil:8000"):
        with _client(store, access, host) as c:
            r = c.get("/api/analyses")
            assert r.status_code == 400, host
            assert "STALLSCOPE_ALLOWED_HOSTS" in r.json()["detail"]
            assert r.headers["x-content-type-options"] == "nosniff"  # refusals get the security headers too


def test_allowed_hosts_from_the_environment_and_the_listen_address():
    assert Access.from_env("0.0.0.0", env={}).allowed_hosts == ("localhost", "127.0.0.1", "::1")
    assert Access.from_env("192.0.2.7", env={}).allowed_hosts == ("localhost", "127.0.0.1", "::1", "192.0.2.7")
    a = Access.from_env("0.0.0.0", env={"STALLSCOPE_ALLOWED_HOSTS": "Stallscope.Example.com, localhost"})
    assert a.allowed_hosts == ("stallscope.example.com", "localhost")
    assert a.host_allowed("stallscope.example.com:443") and not a.host_allowed("127.0.0.1:8000")
    with pytest.raises(ValueError, match="16 characters"):
        Access.from_env(env={"STALLSCOPE_TOKEN": "short"})


def test_a_page_of_another_origin_cannot_post_or_patch(store):
    """Locally too: a page on any site the visitor opens could otherwise post to http://127.0.0.1:8000."""
    with _client(store, Access.from_env(env={})) as c:
        for origin in ("http://evil.example", "http://127.0.0.1:9999", "null", "http://127.0.0.1:8000.evil.example"):
            r = _upload(c, {"Origin": origin})
            assert r.status_code == 403, origin
        assert c.get("/api/analyses").json() == []  # nothing was created
        created = _upload(c, {"Origin": "http://127.0.0.1:8000"})  # the app's own page
        assert created.status_code == 201
        aid, sid = created.json()["id"], created.json()["sources"][0]["id"]
        assert _patch(c, aid, sid, {"Origin": "http://evil.example"}).status_code == 403
        assert _patch(c, aid, sid, {"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert _patch(c, aid, sid, {"Origin": "http://127.0.0.1:8000"}).status_code == 200
        assert _patch(c, aid, sid).status_code == 200  # no Origin: curl, scripts
        # reads from anywhere are not refused by the Origin check (the browser keeps their answers from the page)
        assert c.get(f"/api/analyses/{aid}", headers={"Origin": "http://evil.example"}).status_code == 200
    # the Vite dev server forwards its own Host (localhost:5173) with its page's Origin
    with _client(store, Access.from_env(env={}), "localhost:5173") as c:
        assert _patch(c, aid, sid, {"Origin": "http://localhost:5173"}).status_code == 200
    listed = Access.from_env(env={"STALLSCOPE_ALLOWED_ORIGINS": "http://localhost:5173"})
    with _client(store, listed) as c:
        assert _patch(c, aid, sid, {"Origin": "http://localhost:5173"}).status_code == 200


def test_local_mode_needs_no_token(store):
    with _client(store, Access.from_env(env={})) as c:
        created = _upload(c).json()
        assert len(created["edit_key"]) >= 20
        assert [a["id"] for a in c.get("/api/analyses").json()] == [created["id"]]
        assert _patch(c, created["id"], created["sources"][0]["id"]).status_code == 200


def test_shared_server_token_and_edit_keys(store):
    shared = Access.from_env(env={"STALLSCOPE_TOKEN": TOKEN})
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with _client(store, shared) as c:
        # uploading needs the token
        r = _upload(c)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert _upload(c, {"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        first, second = _upload(c, auth).json(), _upload(c, auth).json()
        # the list of every analysis needs it; a browser's own analyses by id do not
        assert c.get("/api/analyses").status_code == 401
        assert {a["id"] for a in c.get("/api/analyses", headers=auth).json()} == {first["id"], second["id"]}
        mine = c.get("/api/analyses", params={"id": [first["id"], "not-an-analysis"]})
        assert mine.status_code == 200 and [a["id"] for a in mine.json()] == [first["id"]]
        # an analysis' link reads it without anything else
        assert c.get(f"/api/analyses/{first['id']}").status_code == 200
        assert c.get(f"/api/analyses/{first['id']}/requests").status_code == 200
        # changing needs the edit key of that analysis, or the token
        aid, sid = first["id"], first["sources"][0]["id"]
        assert _patch(c, aid, sid).status_code == 401
        assert _patch(c, aid, sid, {"X-Edit-Key": second["edit_key"]}).status_code == 403
        assert _patch(c, aid, sid, {"X-Edit-Key": "x" * 1000}).status_code == 403
        assert _patch(c, aid, sid, {"X-Edit-Key": first["edit_key"]}).status_code == 200
        assert _patch(c, aid, sid, auth).status_code == 200
        assert c.get(f"/api/analyses/{aid}").json()["sources"][0]["clock_offset_ns"] == 1000


def test_edit_keys_are_kept_as_digests(store):
    with _client(store, Access.from_env(env={})) as c:
        created = _upload(c).json()
    con = store.cursor()
    try:
        rows = con.execute("SELECT analysis_id, key_sha256 FROM edit_keys").fetchall()
    finally:
        con.close()
    assert rows and rows[0][0] == created["id"] and created["edit_key"] not in rows[0][1]
