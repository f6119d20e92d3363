"""Every reader on the lab's own recordings (samples/real/): each file as a user would drop it alone, its source's
format, kind and counts against tests/golden/lab_readers.json (checked by hand against the files: lines as `wc -l`
counts them, events as the tools wrote them). The project's own corpus covers every reader, so a clone without
../shared tests them all: blkparse text, blktrace per-CPU binaries, trace.dat v7, its trace-cmd report text, the
tracefs function_graph text, perf script, offcputime (multi-line and folded) and offwaketime.

`STALLSCOPE_GOLDEN=write pytest tests/test_lab_readers.py` rewrites the golden file after a recording is added."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests import lab_recordings as lab
from tests.conftest import REPO, ingest_paths

GOLDEN = REPO / "tests" / "golden" / "lab_readers.json"
# file (as the recording names it) -> what it is read as; a set's per-CPU files are one upload
FILES = [
    "trace.dat",
    "trace.txt",
    "blkparse.txt",
    "blktrace",
    "perf.script.txt",
    "offcputime.txt",
    "offcputime.folded.txt",
    "offwaketime.txt",
]


def _cases() -> list[tuple[str, str]]:
    out = []
    for name in lab.names():
        rec = lab.REAL / name
        for f in FILES:
            if (rec / f).exists() or (rec / f"{f}.gz").exists():
                out.append((name, f))
    return out


def _source_facts(store, paths) -> list[dict]:
    aid = ingest_paths(store, *paths)["id"]
    con = store.cursor()
    try:
        rows = con.execute(
            "SELECT format, json_extract_string(files, '$[0].kind') AS kind, lines, events, skipped_lines FROM sources"
            " WHERE analysis_id = ? ORDER BY id",
            [aid],
        ).fetchall()
        waits = con.execute(
            "SELECT count(*) FROM wait_rows w JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = ?", [aid]
        ).fetchone()[0]
        requests = con.execute(
            "SELECT count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ?", [aid]
        ).fetchone()[0]
    finally:
        con.close()
    facts = [dict(zip(("format", "kind", "lines", "events", "skipped_lines"), r)) for r in rows]
    return [{**facts[0], "sources": len(facts), "waits": waits, "requests": requests}]


def _facts(store, name: str, f: str, tmp_path) -> dict:
    rec = lab.REAL / name
    if f == "blktrace":
        paths = sorted((rec / "blktrace").glob("*.blktrace.*"))
    else:
        paths = [lab.text_file(name, f, tmp_path)]
    return _source_facts(store, paths)[0]


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize(("name", "f"), _cases())
def test_each_recorded_file_reads_as_recorded(store, tmp_path, name, f):
    got = _facts(store, name, f, tmp_path)
    key = f"{name}/{f}"
    if os.environ.get("STALLSCOPE_GOLDEN") == "write":
        golden = _golden()
        golden[key] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
    assert got == _golden().get(key), key
    assert got["skipped_lines"] == 0 or f == "perf.script.txt", got


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (make test installs it)")
@pytest.mark.parametrize("name", [n for n in lab.names() if (lab.REAL / n / "trace.dat").exists()])
def test_the_report_text_reads_as_its_trace_dat(store, tmp_path, name):
    """`trace-cmd report` of a recording, dropped as text, gives the same waits and events as the trace.dat."""
    report = tmp_path / "trace.report.txt"
    with open(report, "wb") as out:
        subprocess.run(["trace-cmd", "report", "-i", str(lab.REAL / name / "trace.dat")], stdout=out, check=True)
    text = _source_facts(store, [report])[0]
    dat = _source_facts(store, [lab.REAL / name / "trace.dat"])[0]
    same = ("format", "events", "waits", "skipped_lines")
    assert {k: text[k] for k in same} == {k: dat[k] for k in same}
    assert text["kind"] != dat["kind"]
