"""bench.stages (issue 27: where an ingest's CPU goes): its stages add up to the ingest, and every function it
wraps for the run is put back afterwards."""

from pathlib import Path

from backend import store as store_module
from backend.ingest import pipeline
from bench import stages

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SAMPLE = SAMPLES / "incident.blkparse.txt"
BLKTRACE_SET = sorted((SAMPLES / "real" / "ext4-jbd2" / "blktrace").glob("*.blktrace.*"))


def _wrappable():
    """What bench.stages wraps while it measures (each must be put back)."""
    return (
        pipeline.stage_source,
        list(pipeline.DERIVE_ANALYSIS),
        {k: list(v) for k, v in pipeline.DERIVE_SOURCE.items()},
        store_module.ingest,
    )


def test_stages_add_up_to_the_ingest_and_nothing_stays_wrapped(tmp_path):
    before = _wrappable()
    r = stages.measure([SAMPLE], tmp_path / "stages.duckdb")
    after = _wrappable()
    assert after == before
    names = set(r["stages"])
    assert {"staging", "derive, per source: blk.derive", "commit", "first views", "close (checkpoint)"} <= names
    inside = sum(s["cpu_seconds"] for n, s in r["stages"].items() if n != "close (checkpoint)")
    assert abs(inside - r["ingest"]["cpu_seconds"]) < 1e-6  # "the rest" is what the named stages leave
    assert r["format"] == "blkparse" and r["lines"] > 0
    assert "| **the ingest** |" in stages.table(r)


def test_several_files_are_one_upload(tmp_path):
    """The lab's ext4-jbd2 capture: a blktrace file per device (dm-0, vdb), two sources of one analysis."""
    r = stages.measure(BLKTRACE_SET, tmp_path / "stages.duckdb")
    assert r["file"] == "dm-0.blktrace.0, vdb.blktrace.0"
    assert r["bytes"] == sum(p.stat().st_size for p in BLKTRACE_SET)
    assert r["format"] == "blkparse" and r["sources"] == 2
    assert r["lines"] == 244 + 997  # the event lines `blkparse -i` prints for each file (Debian's blktrace 1.2.0)
