"""A blktrace per-CPU set sent in pieces (issue 36: parts named `chunk`, the members interleaved as the browser sends
them, backend/api/upload_body.py): the set is parsed while it arrives, into the rows the same set gives sent whole
and the rows its blkparse text gives (the goldens of tests/test_blktrace_binary.py); the file hashes are the files';
bad orders of pieces are refused with what was expected; a client that goes away, or a spool limit passed, leaves
nothing, no temporary file either. The writes of pieces never wait for the ingest (ingest/pieces.py)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import threading

import pytest
from fastapi.testclient import TestClient

from backend.access import Access
from backend.api import upload_body
from backend.app import create_app
from backend.ingest.pieces import PiecedInput
from backend.limits import Limits
from bench.server import piece_order
from parsers import blktrace
from tests.conftest import PUBLIC, SAMPLES, needs_public, served_on_loopback, table_counts
from tests.test_upload_stream import BOUNDARY, answer, body_of, open_upload, progress, wait_for

BIN = PUBLIC / "blktrace-binary"
TEXT = PUBLIC / "blkparse-text"
SETS = [  # (the per-CPU files of a capture, its DERIVED blkparse text)
    (sorted((BIN / "isotopp-keks").glob("keks.blktrace.*")), "derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt"),
    (sorted((BIN / "liuzel01-sda").glob("sda.blktrace.*")), "derived-liuzel01-sda-lvm.blkparse.txt"),
    (
        sorted((BIN / "zzunny97-hadoop-eternity8-partial").glob("sdb.blktrace.*")),
        "derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt",
    ),
]
IDS = ["isotopp-8cpu", "liuzel01-2cpu", "zzunny97-partial"]
DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"


def pieced(members: list[tuple[str, bytes]], piece_bytes: int) -> list[tuple[str, str, bytes]]:
    """The `chunk` parts of files sent as the browser sends a set (bench.server.piece_order)."""
    return [
        ("chunk", members[i][0], members[i][1][at : at + n])
        for i, at, n in piece_order([len(d) for _, d in members], piece_bytes)
    ]


def whole(members: list[tuple[str, bytes]]) -> list[tuple[str, str, bytes]]:
    return [("files", name, data) for name, data in members]


def post(client: TestClient, *parts) -> tuple[int, dict]:
    body = body_of(*parts)
    r = client.post(
        "/api/analyses", content=body, headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    )
    return r.status_code, r.json()


@pytest.fixture
def app(store):
    return create_app(store, warm=False, access=Access(allowed_hosts=("*",)))


@pytest.fixture
def client(app):
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture
def opened(monkeypatch) -> list[PiecedInput]:
    """Every PiecedInput the server makes: how the body's files were received, and whether their files were closed."""
    made: list[PiecedInput] = []

    class Recorded(PiecedInput):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(upload_body, "PiecedInput", Recorded)
    return made


def rows_of(store, analysis_id: str) -> dict[str, list[tuple]]:
    """Every table's rows of one analysis, sorted, without the ids that differ between analyses (its id, its
    sources' ids)."""
    con = store.cursor()
    try:
        sources = [r[0] for r in con.execute("SELECT id FROM sources WHERE analysis_id = ?", [analysis_id]).fetchall()]
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        out = {}
        # not compared: edit_keys (a random key per analysis), first_views (the answers of the other tables' rows,
        # keyed by source ids)
        for table in sorted(set(tables) - {"edit_keys", "first_views"}):
            cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            kept = [c for c in cols if c not in ("source_id", "analysis_id", "id", "created_at")]
            if "analysis_id" in cols:
                where, args = "analysis_id = ?", [analysis_id]
            elif "source_id" in cols:
                where, args = f"source_id IN ({', '.join('?' * len(sources))})", sources
            else:
                continue
            listed = ", ".join(f'"{c}"' for c in kept)
            out[table] = sorted(
                (repr(r) for r in con.execute(f"SELECT {listed} FROM {table} WHERE {where}", args).fetchall())
            )
        return out
    finally:
        con.close()


@needs_public
@pytest.mark.parametrize(("paths", "text"), SETS, ids=IDS)
def test_a_set_in_pieces_gives_every_row_the_set_sent_whole_gives(client, store, opened, paths, text):
    """The same set sent whole, then in pieces of 4000 bytes (not a multiple of a record: pieces end mid-record) with
    its blkparse text sent whole before it: every table holds the same rows for both, the sources the same files,
    bytes and hashes (sha256sum's), and the set's blk tables hold the rows its blkparse text gives (the golden)."""
    members = [(p.name, p.read_bytes()) for p in paths]
    status, sent_whole = post(client, *whole(members))
    assert status == 201, sent_whole
    assert opened == []  # the old shape: no file was received in pieces
    textual = (text, (TEXT / text).read_bytes())
    status, sent_in_pieces = post(client, ("files", *textual), *pieced(members, 4000), ("name", None, b"pieces"))
    assert status == 201, sent_in_pieces
    assert [f.pieces for f in opened] == [max(1, -(-len(d) // 4000)) for _, d in members]
    assert all(f._file.closed for f in opened)  # their temporary files are removed

    binary, from_text = sent_in_pieces["sources"][1], sent_in_pieces["sources"][0]
    assert binary["filename"] == blktrace.source_name([p.name for p in paths]) == sent_whole["sources"][0]["filename"]
    assert [f["sha256"] for f in binary["files"]] == [hashlib.sha256(d).hexdigest() for _, d in members]
    for key in ("files", "bytes", "events", "lines", "notes", "skipped_lines"):
        assert binary[key] == sent_whole["sources"][0][key], key

    got_whole = rows_of(store, sent_whole["id"])
    # the set's rows alone: the analysis sent in pieces also holds its text's
    alone = client.post(
        "/api/analyses",
        content=body_of(*pieced(members, 4000)),
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    ).json()
    got_pieces = rows_of(store, alone["id"])
    assert got_whole.keys() == got_pieces.keys()
    for table in got_whole:
        assert got_pieces[table] == got_whole[table], table
    assert sum(len(r) for r in got_whole.values()) > 1000  # rows, not nothing

    con = store.cursor()
    try:
        for table in ("blk_requests", "blk_bios", "blk_events", "blk_top"):
            names = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[0] != "source_id"]
            cols = ", ".join(f'"{n}"' for n in names)
            rows = [
                con.execute(f"SELECT {cols} FROM {table} WHERE source_id = ? ORDER BY line", [s["id"]]).fetchall()
                for s in (binary, from_text)
            ]
            assert rows[0] == rows[1], table
    finally:
        con.close()


@needs_public
def test_a_set_in_pieces_is_parsed_before_its_last_piece_arrives(store, monkeypatch):
    """Over a socket: half the body sent, the set's source is being parsed (its bytes read), then the rest."""
    monkeypatch.setattr(blktrace, "READ_BYTES", 2048)
    monkeypatch.setattr(blktrace, "parse_set", functools.partial(blktrace.parse_set, chunk_bytes=4096))
    app = create_app(store, warm=False, access=Access(allowed_hosts=("*",)), limits=Limits(body_timeout_s=5.0))
    paths = SETS[0][0]
    members = [(p.name, p.read_bytes()) for p in paths]
    body = body_of(*pieced(members, 4000))
    with served_on_loopback(app, Limits()) as port:
        s = open_upload(port, len(body), "p1")
        s.sendall(body[: len(body) // 2])
        got = wait_for(lambda: (p := progress(port, "p1"))["bytes_read"] > 0 and p)
        assert got["phase"] == "parsing" and got["filename"] == "keks.blktrace.0-7", got
        s.sendall(body[len(body) // 2 :])
        status, created = answer(s)
        s.close()
    assert status == 201, created
    assert created["sources"][0]["events"] == 2398  # what blkparse prints for the set


@needs_public
def test_a_client_that_goes_away_mid_pieces_leaves_nothing(store, opened):
    app = create_app(store, warm=False, access=Access(allowed_hosts=("*",)), limits=Limits(body_timeout_s=5.0))
    before = table_counts(store)
    members = [(p.name, p.read_bytes()) for p in SETS[0][0]]
    body = body_of(*pieced(members, 4000))
    with served_on_loopback(app, Limits()) as port:
        s = open_upload(port, len(body), "p2")
        s.sendall(body[: len(body) // 2])
        wait_for(lambda: len(opened) == len(members) and opened[0].written > 0)
        s.close()
        wait_for(lambda: app.state.uploads.uploads == 0)
        assert progress(port, "p2")["phase"] == "error"
    assert table_counts(store) == before
    assert all(f._file.closed for f in opened)
    assert app.state.uploads.spooled == 0


@needs_public
def test_pieces_past_the_spool_limit_are_refused_and_leave_nothing(store, opened):
    app = create_app(store, warm=False, access=Access(allowed_hosts=("*",)), limits=Limits(spool_bytes=50_000))
    before = table_counts(store)
    members = [(p.name, p.read_bytes()) for p in SETS[0][0]]  # 128 KiB
    with TestClient(app, base_url="http://127.0.0.1") as c:
        status, got = post(c, *pieced(members, 4000))
    assert status == 503 and "spooled bytes" in got["detail"], got
    assert table_counts(store) == before
    assert all(f._file.closed for f in opened) and app.state.uploads.spooled == 0


BAD_ORDERS = {
    "a first piece after a second one": (
        [("chunk", "s.blktrace.0", b"a"), ("chunk", "s.blktrace.0", b"b"), ("chunk", "s.blktrace.1", b"c")],
        "the first piece of 's.blktrace.1' came after the pieces of other files continued or ended",
    ),
    "a piece after its file ended": (
        [("chunk", "s.blktrace.0", b"a"), ("name", None, b"x"), ("chunk", "s.blktrace.0", b"b")],
        "a piece of 's.blktrace.0' after its file ended",
    ),
    "a piece of a file sent whole": (
        [("files", "s.blktrace.0", b"a"), ("chunk", "s.blktrace.0", b"b")],
        "a piece of 's.blktrace.0', a file already sent whole",
    ),
    "a piece without a filename": (
        [("chunk", None, b"a")],
        'a part named "chunk" (a piece of a file) has no filename',
    ),
}


@pytest.mark.parametrize("case", BAD_ORDERS, ids=list(BAD_ORDERS))
def test_pieces_out_of_order_are_refused_saying_what_was_expected(client, store, opened, case):
    parts, message = BAD_ORDERS[case]
    before = table_counts(store)
    status, got = post(client, *parts)
    assert status == 400 and message in got["detail"], got
    assert table_counts(store) == before
    assert all(f._file.closed for f in opened)


def test_a_file_in_many_pieces_counts_once_and_too_many_files_are_refused(client, store):
    from backend.api.analyses import MAX_FILES

    one = [("chunk", "s.blktrace.0", b"") for _ in range(MAX_FILES + 5)]  # one file, empty pieces: 422 (no events)
    status, got = post(client, *one)
    assert status == 422 and got["files"][0]["filename"] == "s.blktrace.0", got
    many = [("chunk", f"s.blktrace.{cpu}", b"") for cpu in range(MAX_FILES + 1)]
    status, got = post(client, *many)
    assert status == 400 and f"more than {MAX_FILES} files in one upload" in got["detail"], got


def test_a_text_file_sent_in_pieces_is_read_as_sent_whole(client, store):
    """Pieces are not only for sets: a blkparse text in pieces (and a file after them, sent whole) is read."""
    data = DEMO.read_bytes()
    other = (SAMPLES / "ext4-jbd2-commit.offwaketime.txt").read_bytes()
    status, got = post(client, *pieced([(DEMO.name, data)], 100_000), ("files", "w.offwaketime.txt", other))
    assert status == 201, got
    status, alone = post(client, ("files", DEMO.name, data))
    assert [s["format"] for s in got["sources"]] == ["blkparse", "offcputime"]
    assert got["sources"][0]["events"] == alone["sources"][0]["events"] > 0
    assert got["sources"][0]["files"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    assert rows_of(store, got["id"])["blk_requests"] == rows_of(store, alone["id"])["blk_requests"]


def test_writes_never_wait_for_the_reader_and_the_hash_is_the_files(tmp_path):
    """A reader waiting for bytes gets them as they are written; the writer never waits, however far ahead it is;
    the hash is of every byte; a drained file drops what comes and is closed."""
    data = bytes(range(256)) * 20_000  # 5 MB
    spooled = []

    async def run() -> tuple[bytes, str]:
        f = PiecedInput(spooled.append)
        f.start_hash()
        got = bytearray()

        def read() -> None:
            while chunk := f.read(70_001):
                got.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        for at in range(0, len(data), 65_536):  # the whole file, without waiting for the reader
            await f.write(memoryview(data)[at : at + 65_536])
        f.end()
        reader.join(10)
        digest = f.digest()
        f.drain()
        await f.write(b"dropped")
        return bytes(got), digest

    got, digest = asyncio.run(run())
    assert got == data and digest == hashlib.sha256(data).hexdigest() and sum(spooled) == len(data)


def test_an_aborted_file_gives_its_error_to_a_waiting_reader():
    from backend.ingest.arrivals import ReceiveAborted

    f = PiecedInput()
    errors = []

    def read() -> None:
        try:
            f.read(10)
        except ReceiveAborted as e:
            errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    f.abort(ReceiveAborted("the client went away"))
    reader.join(10)
    f.drain()
    assert [str(e) for e in errors] == ["the client went away"]


def test_the_browsers_order_of_pieces():
    """The first piece of every file, then the rest in turn; an empty file is one empty piece."""
    assert piece_order([10, 0, 25], 10) == [(0, 0, 10), (1, 0, 0), (2, 0, 10), (2, 10, 10), (2, 20, 5)]
    assert piece_order([5, 12], 4) == [(0, 0, 4), (1, 0, 4), (0, 4, 1), (1, 4, 4), (1, 8, 4)]
