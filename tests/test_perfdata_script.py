"""perf.data decoded by Debian's `perf script` (parsers/perfdata.py): the same tables as the `perf script` text of the
same file, refusals of what perf cannot read, limits on the child. Skipped whole when perf is not installed (`make
test` installs linux-perf); tests/test_perfdata.py needs no perf."""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess

import pyarrow as pa
import pytest

from parsers import perf, perfdata
from parsers.common import ParseError, ParseReport
from tests.conftest import SAMPLES, ingest_bytes

if shutil.which("perf") is None:
    pytest.skip("needs perf (Debian's linux-perf: make test installs it)", allow_module_level=True)

FILE = SAMPLES / "sandbox-sched-block.perf.data"
PIPE = SAMPLES / "sandbox-sched.pipe.perf.data"


def _tables(reader, data: bytes, filename: str = "p.data") -> tuple[dict[str, pa.Table], ParseReport]:
    report, batches = ParseReport(filename), {}
    for name, batch in reader.parse(io.BytesIO(data), report):
        batches.setdefault(name, []).append(batch)
    return {name: pa.Table.from_batches(b) for name, b in batches.items()}, report


@pytest.mark.parametrize("path", [FILE, PIPE], ids=["file", "pipe"])
def test_tables_equal_its_perf_script_text(path):
    """What `perf script -i FILE` prints with its default fields, uploaded as text, gives every table the perf.data
    gives (both decoded by this host's perf, so the symbols are the same)."""
    text = subprocess.run(["perf", "script", "-i", str(path)], capture_output=True, check=True).stdout
    want, want_report = _tables(perf, text)
    got, report = _tables(perfdata, path.read_bytes())
    assert got.keys() == want.keys() and got["sched_switch"].num_rows > 100
    for name in want:
        assert got[name].equals(want[name]), name
    assert (report.lines, report.events, report.skipped) == (want_report.lines, want_report.events, 0)
    assert report.files[0]["kind"] in ("perf script (perf.data)", "perf script (perf.data, pipe form)")
    assert report.bytes_read == path.stat().st_size
    assert any(n.startswith(("perf.data, decoded by perf script", "perf.data, pipe form")) for n in report.notes)


def test_an_upload_is_analysed(store):
    """Waits with their recorded stacks and block requests rebuilt from the block tracepoints, as for the text."""
    src = ingest_bytes(store, **{"capture.perf.data": FILE.read_bytes()})["sources"][0]
    assert (
        src["format"] == "ftrace" and src["files"][0]["kind"] == "perf script (perf.data)" and src["skipped_lines"] == 0
    )
    con = store.cursor()
    waits, stacked = con.execute("SELECT count(*), count(stack_text) FROM waits").fetchone()
    assert waits > 50 and stacked > 0
    assert con.execute("SELECT count(*) FROM blk_requests").fetchone()[0] == 137


def _fake_perf(tmp_path, body: str) -> str:
    script = tmp_path / "perf"
    script.write_text('#!/bin/sh\n[ "$1" = version ] && { echo "perf version 0.0-test"; exit 0; }\n' + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_perf_crash_and_failure_are_refusals(tmp_path, monkeypatch):
    monkeypatch.setattr(perfdata, "PERF", _fake_perf(tmp_path, 'echo "bad header" >&2; kill -SEGV $$'))
    with pytest.raises(ParseError, match=r"p\.data: `perf script` crashed \(SIGSEGV\) while decoding the perf.data"):
        _tables(perfdata, FILE.read_bytes())
    monkeypatch.setattr(perfdata, "PERF", _fake_perf(tmp_path, 'echo "0x4a718 [0x100]: failed" >&2; exit 234'))
    with pytest.raises(ParseError, match=r"could not read it \(exit status 234\): 0x4a718 \[0x100\]: failed"):
        _tables(perfdata, FILE.read_bytes())


def test_a_silent_perf_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(perfdata, "STALL_SECONDS", 1)
    monkeypatch.setattr(perfdata, "PERF", _fake_perf(tmp_path, "exec sleep 30"))
    with pytest.raises(ParseError, match=r"`perf script` wrote nothing for 1 s and was stopped"):
        _tables(perfdata, FILE.read_bytes())


def test_a_runaway_perf_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(perfdata, "OUTPUT_PER_DATA_BYTE", 0)  # 16 MiB of text at most
    line = "dd 1 [000] 1.000001: sched:sched_switch: a:1 [1] S ==> b:2 [2]"
    monkeypatch.setattr(perfdata, "PERF", _fake_perf(tmp_path, f"exec yes '{line}'"))
    with pytest.raises(ParseError, match=r"wrote more than 16,777,216 bytes of text for 495,632 bytes of perf.data"):
        _tables(perfdata, FILE.read_bytes())


def _children() -> bytes:
    return subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "perf script"], capture_output=True).stdout


def test_damaged_files_are_read_or_refused_never_worse():
    """Bytes of the data section overwritten, runs of garbage, cuts: each copy is read (what perf decoded) or refused
    with a ParseError naming the file; never another exception, a hang or a leftover child."""
    data = FILE.read_bytes()
    rng = random.Random(36)
    outcomes = {"read": 0, "refused": 0}
    for i in range(24):
        buf = bytearray(data)
        if i % 3 == 0:
            for _ in range(rng.randint(1, 16)):
                buf[rng.randrange(1064, 1064 + 477_816)] = rng.randrange(256)
        elif i % 3 == 1:
            at = rng.randrange(0, len(buf))
            buf[at : at + 64] = rng.randbytes(min(64, len(buf) - at))
        else:
            del buf[rng.randrange(10, len(buf)) :]
        try:
            _tables(perfdata, bytes(buf))
            outcomes["read"] += 1
        except ParseError as e:
            assert str(e).startswith(("p.data: ", "p.data, byte ")), str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] >= 8, outcomes
    assert _children() == b""
