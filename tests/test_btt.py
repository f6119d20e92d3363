"""btt's figures, reproduced: every public blkparse sample, every blktrace binary sample and random traces give, per
device, btt's N, MIN, AVG and MAX of every row to the nanosecond (as btt prints them).

The goldens are btt's own reports (`btt -A`, blktrace 1.2.0), kept as files: tests/golden/btt/ for the samples,
tests/fixtures/btt/random/ for the random traces; tests/fixtures/btt/README.md says how they were made. btt is never
run here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.cache import AnalysisCache
from backend.queries.requests import BTT_METRICS, dispatch_summary
from parsers import blkparse, blktrace
from parsers.common import ParseReport
from tests.conftest import PUBLIC, ingest_paths, needs_public

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "btt"
RANDOM = HERE / "fixtures" / "btt" / "random"
TEXTS = sorted((PUBLIC / "blkparse-text").glob("*.txt"))
BINARY = PUBLIC / "blktrace-binary"


def btt_per_device(path: Path) -> dict[tuple[str, str], str]:
    """The "Per Device" section of a btt -A report: {(maj,min, row): "MIN AVG MAX N"} as printed."""
    out, section, metric = {}, None, None
    for line in path.read_text().splitlines():
        if line.startswith("===================="):
            section = line.strip("= ")
            continue
        if section != "Per Device":
            continue
        m = re.match(r"^\s+(\w+)\s+MIN\s+AVG", line)
        if m:
            metric = m[1]
            continue
        m = re.match(r"^\(\s*(\d+),\s*(\d+)\)\s+(.*)$", line)
        if m:
            out[(f"{m[1]},{m[2]}", metric)] = " ".join(m[3].split())
    return out


def as_btt_prints(n: int, lo: int, hi: int, total: int) -> str:
    """MIN AVG MAX N as btt prints them: seconds to 9 decimals, AVG = BIT_TIME(total) / n in doubles."""
    avg = (float(total // 10**9) + float(total % 10**9) / 1.0e9) / n
    return " ".join(("%13.9f %13.9f %13.9f %11d" % (lo / 1e9, avg, hi / 1e9, n)).split())


def per_device(rows: list[dict]) -> dict[tuple[str, str], str]:
    """blk_btt rows summed per device as btt sums them (M2D: not in btt's per-device section)."""
    acc: dict = {}
    for r in rows:
        a = acc.setdefault((r["dev"], r["metric"]), [0, None, None, 0])
        a[0] += r["n"]
        a[1] = r["min_ns"] if a[1] is None else min(a[1], r["min_ns"])
        a[2] = r["max_ns"] if a[2] is None else max(a[2], r["max_ns"])
        a[3] += r["total_ns"]
    return {k: as_btt_prints(*v) for k, v in acc.items() if k[1] != "M2D"}


def btt_rows(batches) -> list[dict]:
    return [r for table, batch in batches if table == "blk_btt" for r in batch.to_pylist()]


def parsed_text(path: Path) -> list[dict]:
    with open(path, "rb") as f:
        return btt_rows(blkparse.parse(f, ParseReport(path.name)))


@needs_public
@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_every_blkparse_sample_gives_btts_figures(path):
    golden = btt_per_device(GOLDEN / (path.name + ".btt.avg"))
    assert per_device(parsed_text(path)) == golden


@needs_public
def test_the_samples_have_btt_rows_to_compare():
    """The comparison above is not empty: the samples hold btt's rows of every kind a trace of theirs can give."""
    rows = set()
    for path in TEXTS:
        rows |= {metric for _, metric in btt_per_device(GOLDEN / (path.name + ".btt.avg"))}
    assert {"Q2Q", "Q2G", "G2I", "Q2M", "I2D", "D2C", "Q2C"} <= rows
    assert len(btt_per_device(GOLDEN / "derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt.btt.avg")) == 5


@pytest.mark.parametrize("path", sorted(RANDOM.glob("*.blkparse.txt")), ids=lambda p: p.name)
def test_random_traces_give_btts_figures(path):
    """Overlapping and repeated bios, D and C ranges over several bios or part of one, remaps, a dm device: btt's
    tree walk (which bio a G/I/M finds, which bios a D/C reaches) and its sums, to the nanosecond."""
    golden = btt_per_device(path.with_name(path.name.replace(".blkparse.txt", ".btt.avg")))
    assert golden and per_device(parsed_text(path)) == golden


def _binary(name: str) -> list[tuple[str, object]]:
    return [(p.name, open(p, "rb")) for p in sorted((BINARY / name).iterdir())]


@needs_public
@pytest.mark.parametrize(
    "name, golden",
    [
        ("liuzel01-sda", "binary-liuzel01-sda"),
        ("isotopp-keks", "binary-isotopp-keks"),
        ("zzunny97-hadoop-eternity8-partial", "binary-zzunny97"),
        ("takeoverjp-sample", "binary-takeoverjp"),
    ],
)
def test_blktrace_binary_sets_give_btts_figures(name, golden):
    members = _binary(name)
    try:
        rows = btt_rows(blktrace.parse_set(members, ParseReport(name)))
    finally:
        for _, f in members:
            f.close()
    assert per_device(rows) == btt_per_device(GOLDEN / f"{golden}.btt.avg")


@needs_public
@pytest.mark.parametrize("path", sorted((BINARY / "romeus-blkparse-dump").glob("*.bin")), ids=lambda p: p.name)
def test_blkparse_dumps_give_btts_figures(path):
    """btt reads a dump's raw times; blkparse prints each record's time from a genesis it takes again at a record of
    time 0 (line 513 of each of these dumps), and Stallscope reads what blkparse prints: the Q2Q, Q2G and Q2C of the
    bio across that point differ from btt's by the jump (every other figure is btt's), and all equal btt's report of
    the dump's text as blkparse prints it (*.as-printed.btt.avg)."""
    with open(path, "rb") as f:
        got = per_device(btt_rows(blktrace.parse(f, ParseReport(path.name))))
    golden = btt_per_device(GOLDEN / f"binary-romeus-{path.stem}.btt.avg")
    assert set(got) == set(golden)
    assert {metric for key, metric in got if got[key, metric] != golden[key, metric]} == {"Q2Q", "Q2G", "Q2C"}
    assert got == btt_per_device(GOLDEN / f"binary-romeus-{path.stem}.as-printed.btt.avg")


@needs_public
def test_dispatch_summary_shows_btts_figures_beside_the_requests(store):
    """The dispatch summary per device: each request counted once (n, min, avg, percentiles), and btt's rows (per
    queued bio) that equal btt's report; per process, btt's rows per pid of the queued bio sum to the device's."""
    path = PUBLIC / "blkparse-text" / "derived-liuzel01-sda-lvm.blkparse.txt"
    aid = ingest_paths(store, path)["id"]
    con = store.cursor()
    (dev,) = [g for g in dispatch_summary(con, AnalysisCache(), aid, "device") if g["dev"] == "8,0"]
    assert dev["btt"] is not None
    got = {
        ("8,0", r["metric"]): as_btt_prints(r["n"], r["min_ns"], r["max_ns"], r["total_ns"])
        for r in dev["btt"]
        if r["metric"] != "M2D"
    }
    assert got == btt_per_device(GOLDEN / (path.name + ".btt.avg"))
    assert [r["metric"] for r in dev["btt"]] == sorted((r["metric"] for r in dev["btt"]), key=BTT_METRICS.index)
    # per request: 109 requests dispatched and completed; btt counts 113 D2C (4 merged bios each get one)
    assert (dev["d2c"]["n"], {r["metric"]: r["n"] for r in dev["btt"]}["D2C"]) == (109, 113)
    assert dev["d2c"]["min"] <= dev["d2c"]["avg"] <= dev["d2c"]["max"]
    procs = dispatch_summary(con, AnalysisCache(), aid, "process")
    by_pid = {}
    for g in procs:
        for r in g["btt"] or []:
            by_pid.setdefault(g["pid"], {})[r["metric"]] = r["n"]
    assert sum(m.get("D2C", 0) for m in by_pid.values()) == 113
    # with a window that leaves requests out: the requests' figures only
    t = con.execute("SELECT min(t_ns), max(t_ns) FROM blk_requests").fetchall()[0]
    assert all(g["btt"] is None for g in dispatch_summary(con, AnalysisCache(), aid, "device", t[0] + 1, t[1]))
