"""Hostile input: mutated trace lines through the C scan, and malformed HTTP through the server.

Nothing may crash, hang, answer 500, or leave a partial analysis behind.
"""

from __future__ import annotations

import io
import random

import pytest

from parsers import blkparse
from parsers.common import ParseReport
from tests.conftest import PUBLIC, SEED, table_counts

CORPUS = [SEED / "cfq-dispatch-starvation.blkparse.txt", *sorted((PUBLIC / "blkparse-text").glob("*.txt"))]


def mutate(line: bytes, rng: random.Random) -> bytes:
    ops = rng.randrange(6)
    b = bytearray(line)
    if ops == 0 and b:  # flip bytes
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif ops == 1 and b:  # truncate
        del b[rng.randrange(len(b)) :]
    elif ops == 2:  # duplicate a slice
        i = rng.randrange(len(b) + 1)
        b[i:i] = b[: rng.randrange(1, 40)] * rng.randrange(1, 50)
    elif ops == 3:  # huge numbers
        b = bytearray(bytes(b).replace(b" ", b" 99999999999999999999 ", 1))
    elif ops == 4:  # brackets and parentheses
        i = rng.randrange(len(b) + 1)
        b[i:i] = rng.choice([b"[", b"]", b"(", b")", b"<-", b"+", b"/", b",", b"\t", b"\r", b"\x00"])
    else:  # swap two tokens
        toks = bytes(b).split(b" ")
        if len(toks) > 2:
            i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        b = bytearray(b" ".join(toks))
    return bytes(b).replace(b"\n", b" ")


@pytest.mark.parametrize("seed", range(8))
def test_mutated_traces_never_crash(seed):
    rng = random.Random(seed)
    lines = [ln for p in CORPUS for ln in p.read_bytes().splitlines()]
    picked = [lines[rng.randrange(len(lines))] for _ in range(20000)]
    data = b"\n".join(mutate(ln, rng) if rng.random() < 0.5 else ln for ln in picked)
    report = ParseReport("fuzz")
    rows = 0
    for _, batch in blkparse.parse(
        io.BytesIO(data),
        report,
    ):
        rows += batch.num_rows
    assert report.lines == 20000
    assert report.events + report.skipped <= report.lines
    assert report.events > 5000 and report.skipped > 100  # both paths were exercised
    assert all(e.reason for e in report.examples)


def test_long_lines_and_tiny_chunks():
    """A line longer than the read buffer, and chunks that cut lines anywhere."""
    long = b"  8,0 0 1 0.000000001 1 P N [" + b"x" * 100_000 + b"]\n"
    good = (SEED / "cfq-dispatch-starvation.blkparse.txt").read_bytes()
    report = ParseReport("t")
    rows = [
        r
        for t, b in blkparse.parse(io.BytesIO(long + good), report, chunk_bytes=64)
        if t != "blk_btt"
        for r in b.to_pylist()
    ]
    assert report.lines == 13 and report.events == 13 and report.skipped == 0
    assert [len(r["comm"]) for r in rows if r["line"] == 1] == [100_000]
    small = ParseReport("t")  # the same requests whatever the chunk size
    assert sorted(
        map(str, (r for t, b in blkparse.parse(io.BytesIO(good), small, chunk_bytes=7) for r in b.to_pylist()))
    ) == sorted(map(str, (r for t, b in blkparse.parse(io.BytesIO(good), ParseReport("u")) for r in b.to_pylist())))


BAD_REQUESTS = [
    ("post", "/api/analyses", {"content": b"garbage", "headers": {"content-type": "multipart/form-data; boundary=x"}}),
    (
        "post",
        "/api/analyses",
        {
            "content": b'--x\r\nContent-Disposition: form-data; name="files"; filename="a"\r\n\r\n',
            "headers": {"content-type": "multipart/form-data; boundary=x"},
        },
    ),
    ("post", "/api/analyses", {"content": b"{}", "headers": {"content-type": "application/json"}}),
    ("post", "/api/analyses", {"files": [("files", ("../../etc/passwd", b"\xff\xfe\x00garbage"))]}),
    ("post", "/api/analyses", {"files": [("files", ("\u202e\u0000evil.txt", b"not a trace at all\n"))]}),
    ("post", "/api/analyses", {"files": [("other", ("a.txt", b"x"))]}),
    ("post", "/api/analyses", {"data": {"name": "x" * 100000}}),
    ("get", "/api/analyses/" + "a" * 5000, {}),
    ("get", "/api/analyses/%00/requests", {}),
    ("get", "/api/analyses/x/requests?limit=99999999999999999999999", {}),
    ("get", "/api/analyses/x/requests?t0_ns=-1&t1_ns=abc", {}),
    ("get", "/api/analyses/x/requests/1/99999999999999999999999", {}),
    ("get", "/api/analyses/x/requests?dev=8,0';DROP TABLE sources;--", {}),
    ("get", "/api/analyses/x/latency-over-time?buckets=0", {}),
    ("get", "/api/progress/" + "z" * 300, {}),
    ("get", "/api/analyses/x/waits/by-lock", {}),
    ("get", "/api/analyses/x/waits/by-lock?" + "&".join(["lock_key=a"] * 101), {}),
    ("get", "/api/analyses/x/waits/by-lock?lock_key=" + "%00'" * 300, {}),
    ("delete", "/api/analyses", {}),
    ("get", "/a/%2e%2e/%2e%2e/etc/passwd", {}),
]


@pytest.mark.parametrize("method, url, kw", BAD_REQUESTS, ids=range(len(BAD_REQUESTS)))
def test_server_survives_bad_requests(client, store, method, url, kw):
    before = table_counts(store)
    r = getattr(client, method)(url, **kw)
    assert r.status_code < 500, r.text
    if url.startswith("/api"):
        assert "detail" in r.json()
    assert table_counts(store) == before
    assert client.get("/api/analyses").status_code == 200
