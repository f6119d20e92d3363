"""A tracefs function_graph capture read back without funcgraph-abstime (the lab's iosched-starve recording, first
400 lines of its `trace` file as first recorded, kernel 6.1): its sched events are comments with no time, so no wait
can be measured; the source says so and how to record them with one, instead of showing no stall at all."""

from __future__ import annotations

from tests.conftest import REPO, ingest_paths

UNTIMED = REPO / "tests" / "fixtures" / "tracefs-funcgraph-no-abstime.txt"


def test_untimed_sched_events_are_noted_with_the_fix(client, store):
    aid = ingest_paths(store, UNTIMED)["id"]
    (src,) = client.get(f"/api/analyses/{aid}", headers={"host": "127.0.0.1"}).json()["sources"]
    notes = [n for n in src["notes"] if "sched_switch events have no timestamp" in n]
    assert notes == [
        "5 of 5 sched_switch events have no timestamp (function_graph text without funcgraph-abstime), so no wait"
        " is measured from them: record with `echo 1 > /sys/kernel/tracing/options/funcgraph-abstime` (and"
        " funcgraph-proc), or with trace-cmd"
    ]
