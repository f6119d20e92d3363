"""Uploads parsed while they arrive (issue 27): over a real socket to the app served by uvicorn, the ingest parses a
file before its last byte is sent; a client that goes away mid-upload, a body cut short and a file refused mid-way
leave nothing; several files and the name field in one body; the SHA-256 is that of the bytes sent."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.client
import json
import socket
import time

import pytest

from backend.access import Access
from backend.app import create_app
from backend.ingest import arrivals
from backend.ingest.arrivals import StreamedInput
from backend.limits import Limits
from parsers import blkparse
from tests.conftest import SAMPLES, ingest_paths, served_on_loopback, table_counts

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"  # 1.9 MB: 30 chunks of 64 KiB
BOUNDARY = "b0undary"


@pytest.fixture
def served(store, monkeypatch):
    """(port, app): the app on a free loopback port; blkparse reads 64 KiB at a time and a file part's pipe holds
    256 KiB, so a 1.9 MB file is parsed in many steps while it is sent."""
    monkeypatch.setattr(blkparse, "parse", functools.partial(blkparse.parse, chunk_bytes=64 << 10))
    monkeypatch.setattr(arrivals, "PIPE_BYTES", 256 << 10)
    app = create_app(store, warm=False, access=Access(allowed_hosts=("*",)), limits=Limits(body_timeout_s=5.0))
    with served_on_loopback(app, Limits()) as port:
        yield port, app


def part(name: str, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    return f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()


def body_of(*parts: tuple[str, str | None, bytes]) -> bytes:
    out = b"".join(part(n, f) + data + b"\r\n" for n, f, data in parts)
    return out + f"--{BOUNDARY}--\r\n".encode()


def open_upload(port: int, length: int, token: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(
        f"POST /api/analyses?progress={token} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data;"
        f" boundary={BOUNDARY}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n".encode()
    )
    return s


def answer(s: socket.socket) -> tuple[int, dict]:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def progress(port: int, token: str) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", f"/api/progress/{token}")
        r = c.getresponse()
        got = json.loads(r.read())
        return got if r.status == 200 else {"events": 0, "phase": f"HTTP {r.status}: {got}"}
    finally:
        c.close()


def wait_for(what, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return got


def test_an_upload_is_parsed_while_it_arrives(served, store, tmp_path):
    port, app = served
    data = DEMO.read_bytes()
    body = body_of(("files", DEMO.name, data), ("name", None, b"streamed"))
    half = len(part("files", DEMO.name)) + len(data) // 2
    s = open_upload(port, len(body), "t1")
    s.sendall(body[:half])
    got = wait_for(lambda: (p := progress(port, "t1"))["events"] > 0 and p)  # parsed before the rest is sent
    assert got["phase"] == "parsing" and got["filename"] == DEMO.name and 0 < got["bytes_read"] < len(data)
    s.sendall(body[half:])
    status, created = answer(s)
    s.close()
    assert status == 201, created
    assert progress(port, "t1")["phase"] == "done"
    src = created["sources"][0]
    alone = ingest_paths(store, DEMO)["sources"][0]  # the same file from disk
    for key in ("format", "lines", "events", "skipped_lines", "bytes"):
        assert src[key] == alone[key], key
    assert src["bytes"] == len(data)
    con = store.cursor()
    rows = con.execute("SELECT name FROM analyses WHERE id = ?", [created["id"]]).fetchall()
    sha = con.execute("SELECT sha256 FROM sources WHERE id = ?", [src["id"]]).fetchall()[0][0]
    assert rows == [("streamed",)] and sha == hashlib.sha256(data).hexdigest()
    counts = [
        con.execute("SELECT count(*) FROM blk_requests WHERE source_id = ?", [i]).fetchall()[0][0]
        for i in (src["id"], alone["id"])
    ]
    con.close()
    assert counts[0] == counts[1] > 0
    assert (app.state.uploads.uploads, app.state.uploads.spooled) == (0, 0)


def test_a_client_that_goes_away_mid_upload_leaves_nothing(served, store):
    port, app = served
    before = table_counts(store)
    data = DEMO.read_bytes()
    body = body_of(("files", DEMO.name, data))
    s = open_upload(port, len(body), "t2")
    s.sendall(body[: len(body) // 2])
    wait_for(lambda: progress(port, "t2")["events"] > 0)  # rows are being staged
    s.close()
    wait_for(lambda: app.state.uploads.uploads == 0)  # the ingest ended, and freed its slot
    assert progress(port, "t2")["phase"] == "error"
    assert table_counts(store) == before


def test_a_file_refused_mid_way_is_answered_once_the_body_is_read(served, store):
    port, app = served
    before = table_counts(store)
    good = DEMO.read_bytes()
    bad = b"\x00\x01\x02 not a trace\n" * 1000
    body = body_of(("files", "a.txt", good), ("files", "b.bin", bad), ("files", "c.txt", good))
    s = open_upload(port, len(body), "t3")
    s.sendall(body)
    status, got = answer(s)
    s.close()
    assert status == 422 and [f["filename"] for f in got["files"]] == ["b.bin"], got
    assert table_counts(store) == before
    assert (app.state.uploads.uploads, app.state.uploads.spooled) == (0, 0)


def test_several_files_are_parsed_as_each_arrives(served, store):
    port, _ = served
    report = SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt"
    offcpu = SAMPLES / "ext4-jbd2-commit.offwaketime.txt"
    body = body_of(("name", None, b"three"), *(("files", p.name, p.read_bytes()) for p in (report, DEMO, offcpu)))
    s = open_upload(port, len(body), "t4")
    s.sendall(body)
    status, got = answer(s)
    s.close()
    assert status == 201, got
    assert [x["filename"] for x in got["sources"]] == [report.name, DEMO.name, offcpu.name]
    assert [x["format"] for x in got["sources"]] == ["ftrace", "blkparse", "offcputime"]


def test_a_body_cut_short_is_refused_and_leaves_nothing(served, store):
    port, _ = served
    before = table_counts(store)
    body = body_of(("files", DEMO.name, DEMO.read_bytes()))
    cut = body[: -len(f"--{BOUNDARY}--\r\n") - 1000]  # the closing boundary never comes, the part is cut
    s = open_upload(port, len(cut), "t5")
    s.sendall(cut)
    status, got = answer(s)
    s.close()
    assert status == 400 and "multipart" in got["detail"], got
    assert table_counts(store) == before


def test_the_pipe_holds_a_bounded_number_of_bytes_and_hashes_what_passes():
    """The writer waits while the pipe is full; the reader gets every byte in order, whatever the pieces' sizes."""
    data = bytes(range(256)) * 4000  # ~1 MB

    async def run() -> tuple[bytes, str, int]:
        pipe = StreamedInput(asyncio.get_running_loop(), capacity=64 << 10)
        pipe.start_hash()
        most = 0

        def read() -> bytes:
            assert pipe.head(100) == data[:100]
            out, buf = bytearray(), bytearray(7777)
            while got := pipe.readinto(buf):
                out += buf[:got]
            return bytes(out)

        reader = asyncio.get_running_loop().run_in_executor(None, read)
        at = 0
        for n in (1, 5000, 70000, 123, 300000) * 10:
            await pipe.write(data[at : at + n])
            most = max(most, pipe._held)
            at += n
        await pipe.write(data[at:])
        pipe.end()
        return await reader, await asyncio.get_running_loop().run_in_executor(None, pipe.digest), most

    got, digest, most = asyncio.run(run())
    assert got == data and digest == hashlib.sha256(data).hexdigest()
    assert most <= (64 << 10) + 300000  # one piece past the capacity at most


def test_a_hash_started_after_pieces_came_sees_them_and_a_drained_part_needs_none():
    """The ingest starts a part's hash when it takes the part (ingest/pipeline.py): the pieces that came before are
    kept for it. A part the ingest never takes is drained: its writer is not held, and no hash thread is started."""
    data = bytes(range(256)) * 100

    async def run() -> tuple[str, bytes]:
        loop = asyncio.get_running_loop()
        late, never = StreamedInput(loop, capacity=64 << 10), StreamedInput(loop, capacity=1024)
        await late.write(data[:10000])
        late.start_hash()
        await late.write(data[10000:])
        late.end()
        never.drain()
        await never.write(data)  # dropped: returns at once
        assert never._hasher is None and never._held == 0
        return await loop.run_in_executor(None, late.digest), await loop.run_in_executor(None, late.read)

    digest, read = asyncio.run(run())
    assert digest == hashlib.sha256(data).hexdigest() and read == data
