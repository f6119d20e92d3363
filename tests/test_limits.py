"""Slow and many clients (backend/limits.py, backend/server.py): uploads at once and their spooled bytes are capped
(503 with Retry-After), a body that stalls is dropped (408), and a connection that sends its headers slowly is
closed: 200 such connections were held for as long as they liked (issue 24)."""

from __future__ import annotations

import socket
import time

import pytest
from fastapi.testclient import TestClient

from backend.access import Access
from backend.app import create_app
from backend.limits import Busy, Limits, UploadSlots
from tests.conftest import PUBLIC, SAMPLES, needs_public, served_on_loopback

SAMPLE = SAMPLES / "cfq-dispatch-starvation.blkparse.txt"


def _app(store, **limits):
    return create_app(store, warm=False, access=Access(allowed_hosts=("*",)), limits=Limits(**limits))


def _upload(c: TestClient):
    with open(SAMPLE, "rb") as f:
        return c.post("/api/analyses", files=[("files", (SAMPLE.name, f))])


def test_the_next_upload_past_the_cap_gets_503_with_retry_after(store):
    app = _app(store, max_uploads=1)
    with TestClient(app) as c:
        held = app.state.uploads.take(None)  # an upload in flight
        r = _upload(c)
        assert r.status_code == 503 and r.headers["retry-after"] == "30", r.text
        assert "at once" in r.json()["detail"]
        held.release()
        assert _upload(c).status_code == 201
        assert (app.state.uploads.uploads, app.state.uploads.spooled) == (0, 0)  # released after it
        bad = c.post("/api/analyses", files=[("files", ("x.txt", b"\x00\x01 not a trace"))])
        assert bad.status_code == 422
        assert (app.state.uploads.uploads, app.state.uploads.spooled) == (0, 0)  # and after a refused one


@needs_public
def test_spooled_bytes_are_capped_across_uploads(store):
    """Uploads are parsed as they arrive and spool nothing (a text file passes with the cap all but full); the files
    of a blktrace per-CPU set are copied to disk until the set is complete, and counted: past the cap, 503."""
    sda = sorted((PUBLIC / "blktrace-binary" / "liuzel01-sda").glob("sda.blktrace.*"))
    app = _app(store, spool_bytes=sum(p.stat().st_size for p in sda) + 4096)
    with TestClient(app) as c:
        held = app.state.uploads.take(8192)
        assert _upload(c).status_code == 201  # nothing spooled
        r = c.post("/api/analyses", files=[("files", (p.name, p.read_bytes())) for p in sda])
        assert r.status_code == 503 and r.headers["retry-after"] == "30" and "limit" in r.json()["detail"], r.text
        held.release()
        assert (app.state.uploads.uploads, app.state.uploads.spooled) == (0, 0)
        assert c.post("/api/analyses", files=[("files", (p.name, p.read_bytes())) for p in sda]).status_code == 201


def test_bytes_past_the_declared_length_are_counted():
    slots = UploadSlots(Limits(spool_bytes=1000, max_uploads=4))
    a = slots.take(None)  # no Content-Length: counted as it comes
    a.count(600)
    b = slots.take(None)
    with pytest.raises(Busy):
        b.count(600)
    a.release()
    b.release()
    a.release()  # twice: once counted
    assert (slots.uploads, slots.spooled) == (0, 0)


@pytest.fixture
def live_server(store):
    """The app served by backend.server's uvicorn on a free loopback port, with 1 s header and body timeouts."""
    limits = Limits(header_timeout_s=1.0, body_timeout_s=1.0)
    with served_on_loopback(_app(store, header_timeout_s=1.0, body_timeout_s=1.0), limits) as port:
        yield port


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_connections_sending_headers_slowly_are_closed(live_server):
    socks = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", live_server))
        s.sendall(b"GET /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(s)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.5:  # a header line every 0.25 s: each byte used to restart uvicorn's timer
        for s in socks:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass
        time.sleep(0.25)
    # meanwhile a client that sends its request at once is answered
    with socket.create_connection(("127.0.0.1", live_server), timeout=5) as ok:
        ok.sendall(b"GET /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert ok.recv(4096).startswith(b"HTTP/1.1 200")
    for s in socks:
        s.settimeout(2)
        assert _closed(s)
        s.close()


def test_headers_past_the_cap_get_431(live_server):
    from backend.server import MAX_HEADER_BYTES

    with socket.create_connection(("127.0.0.1", live_server), timeout=5) as s:
        s.sendall(b"GET /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        line = b"X-Filler: " + b"x" * 1000 + b"\r\n"
        try:
            for _ in range(MAX_HEADER_BYTES // len(line) + 2):  # never the blank line that ends them
                s.sendall(line)
        except OSError:  # closed while sending: the answer is read below
            pass
        answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 431"), answer
        assert _closed(s)


def test_a_kept_alive_connection_must_send_its_next_headers_in_time(live_server):
    with socket.create_connection(("127.0.0.1", live_server), timeout=5) as s:
        s.sendall(b"GET /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /api/analyses HTTP/1.1\r\n")  # the next request's headers never end
        t0 = time.monotonic()
        for _ in range(8):
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                break
            time.sleep(0.25)
        assert _closed(s)
        assert time.monotonic() - t0 < 3


def test_a_body_that_stalls_gets_408(live_server):
    with socket.create_connection(("127.0.0.1", live_server), timeout=10) as s:
        s.sendall(
            b"POST /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b"
            b'\r\nContent-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name="files"; '
            b'filename="a.txt"\r\n\r\n8,0 1 1 0.1 1 Q W 1 + 8 [a]\n'
        )
        t0 = time.monotonic()
        answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - t0 < 5


def test_a_json_body_that_stalls_gets_408_not_400(live_server, store):
    from tests.conftest import ingest_paths

    aid = ingest_paths(store, SAMPLE)["id"]
    with socket.create_connection(("127.0.0.1", live_server), timeout=10) as s:
        s.sendall(
            f"POST /api/analyses/{aid}/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            'Content-Length: 1000\r\n\r\n{"sql": "SELECT '.encode()
        )
        t0 = time.monotonic()
        answer = b""
        while chunk := s.recv(4096):  # to its end: the connection is closed
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"sent nothing for 1 s" in answer
        assert time.monotonic() - t0 < 5


def test_a_trickling_upload_is_cut_with_408_and_frees_its_slot_at_once(store):
    """One byte every 0.3 s never stalls for the body timeout (30 s); it is under the minimum average rate after
    the grace, so it is cut (408) and the next upload gets the one slot at once."""
    limits = Limits(max_uploads=1, upload_min_rate=1000, upload_grace_s=1.0)
    with served_on_loopback(_app(store, max_uploads=1, upload_min_rate=1000, upload_grace_s=1.0), limits) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(
                b"POST /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b"
                b'\r\nContent-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name="files"; '
                b'filename="a.txt"\r\n\r\n'
            )
            s.settimeout(0.3)
            t0 = time.monotonic()
            answer = b""
            while not answer and time.monotonic() - t0 < 10:
                try:
                    s.sendall(b"8")
                    answer = s.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    break
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert time.monotonic() - t0 < 4
        with socket.create_connection(("127.0.0.1", port), timeout=30) as ok:  # the slot is free
            body = SAMPLE.read_bytes()
            part = (b'--b\r\nContent-Disposition: form-data; name="files"; filename="' + SAMPLE.name.encode()
                    + b'"\r\n\r\n' + body + b"\r\n--b--\r\n")  # fmt: skip
            ok.sendall(
                b"POST /api/analyses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: multipart/"
                b"form-data; boundary=b\r\nContent-Length: " + str(len(part)).encode() + b"\r\n\r\n" + part
            )
            assert ok.recv(4096).startswith(b"HTTP/1.1 201")


def test_the_pace_lets_a_1_mbit_link_through_and_is_configurable():
    d = Limits()
    assert d.upload_min_rate < 1_000_000 / 8  # bytes/s of a 1 Mbit/s link
    assert d.upload_deadline_s >= d.max_upload_bytes / (1_000_000 / 8)  # the largest upload at 1 Mbit/s
    got = Limits.from_env({"STALLSCOPE_UPLOAD_MIN_RATE": "500", "STALLSCOPE_UPLOAD_GRACE": "5",
                           "STALLSCOPE_UPLOAD_DEADLINE": "60"})  # fmt: skip
    assert (got.upload_min_rate, got.upload_grace_s, got.upload_deadline_s) == (500, 5, 60)
    with pytest.raises(ValueError, match="STALLSCOPE_UPLOAD_MIN_RATE"):
        Limits.from_env({"STALLSCOPE_UPLOAD_MIN_RATE": "0"})


def test_a_shared_server_takes_one_upload_per_client_address(store):
    slots = UploadSlots(Limits(max_uploads=4, one_upload_per_client=True))
    first = slots.take(client="10.0.0.1")
    with pytest.raises(Busy, match="this address"):
        slots.take(client="10.0.0.1")
    other = slots.take(client="10.0.0.2")
    first.release()
    slots.take(client="10.0.0.1").release()
    other.release()
    assert slots.uploads == 0 and slots.by_client == {}
    local = UploadSlots(Limits(max_uploads=4))  # a laptop's server: as many as max_uploads
    local.take(client="127.0.0.1")
    local.take(client="127.0.0.1")
    app = create_app(store, warm=False, access=Access(token="x" * 16, allowed_hosts=("*",)))
    assert app.state.limits.one_upload_per_client
