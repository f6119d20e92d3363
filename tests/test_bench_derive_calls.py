"""bench.derive_calls (issue 36: the derive's critical path): every derive call of an ingest on one time line, in the
thread that ran it, and every function it wraps put back afterwards."""

from pathlib import Path

from backend.derive import pipeline, waits
from bench import derive_calls

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "incident.trace-cmd-report.txt"


def test_the_derive_calls_are_timed_per_thread_and_put_back(tmp_path):
    stage, steps = waits.stage, {k: list(v) for k, v in pipeline.DERIVE_SOURCE.items()}
    analysis = list(pipeline.DERIVE_ANALYSIS)
    r = derive_calls.measure([SAMPLE], tmp_path / "calls.duckdb")
    assert waits.stage is stage and list(pipeline.DERIVE_ANALYSIS) == analysis
    assert {k: list(v) for k, v in pipeline.DERIVE_SOURCE.items()} == steps
    where = {name: thread for _, _, thread, name, _ in r["calls"]}
    assert where["waits.stage"] == "MainThread" and where["waits.find_stacks"] == "MainThread"
    assert where["waits.holder_finder"].startswith("derive-reader")  # beside the waits' staging
    assert where["pipeline._insert_waits"].startswith("derive-inserter")
    at = {name: (a, b) for a, b, _, name, _ in r["calls"]}
    assert all(50 < peak < 4096 for *_, peak in r["calls"])  # MiB, this process' resident memory during each call
    assert at["waits.stage"][1] <= at["waits.find_stacks"][0]
    assert at["waits.find_stacks"][1] <= at["chains.stored_rows"][0]
    assert 0 < r["derive_seconds"] and set(r["first_views"]) >= {"timeline", "chains", "waits"}
    assert "| waits.find_stacks |" in derive_calls.table(r)
