"""Views follow what the capture holds (issue 33, point 3): "What this capture can tell" names the block phases a
capture can time and says what is missing, why and the command that would add it; the heatmap's metrics are the
phases with values (the Dispatch view opens on the first of them: frontend/src/views/dispatch/phases.ts)."""

from __future__ import annotations

import pytest

from tests.conftest import PUBLIC, ingest_bytes, ingest_paths, needs_public

KEKS = PUBLIC / "blktrace-binary" / "isotopp-keks"  # 8 per-CPU files, D and C events only
HADOOP = PUBLIC / "blktrace-binary" / "zzunny97-hadoop-eternity8-partial"  # 2 of 40 per-CPU files: no C events


def _set(folder) -> list:
    files = sorted(folder.glob("*.blktrace.*"))
    if not files:
        pytest.skip(f"{folder} is missing")
    return files


def _caps(client, aid: str) -> tuple[dict, list[dict], list[str]]:
    c = client.get(f"/api/analyses/{aid}/capabilities").json()
    (dispatch,) = [v for v in c["views"] if v["tab"] == "dispatch"]
    metrics = [m["metric"] for m in client.get(f"/api/analyses/{aid}/heatmap/metrics").json()["metrics"]]
    return dispatch, c["missing"], metrics


@needs_public
def test_keks_has_d2c_only_and_says_why(client, store):
    aid = ingest_paths(store, *_set(KEKS))["id"]
    dispatch, missing, metrics = _caps(client, aid)
    assert metrics == ["d2c"]  # the Dispatch view opens on D2C, not on an empty I2D
    assert dispatch["state"] == "data"
    assert dispatch["summary"] == "1168 block requests, timed: D→C 1158 (no I events and no Q events)"
    (gap,) = [m for m in missing if m["own"]]
    assert gap["what"] == "I→D (time in the I/O scheduler) and Q→C (time in all)"
    assert "only D and C were captured" in gap["why"]
    assert gap["capture"].startswith("blktrace -d /dev/sdX") and "no -a mask" in gap["capture"]


@needs_public
def test_hadoop_without_completions_does_not_claim_d2c(client, store):
    aid = ingest_paths(store, *_set(HADOOP))["id"]
    dispatch, missing, metrics = _caps(client, aid)
    assert metrics == ["i2d"]
    assert "D→C" not in dispatch["summary"]  # before: "✓ Dispatch 4845 block requests (I→D, D→C)"
    assert dispatch["summary"] == "4845 block requests, timed: I→D 4743 (no C events)"
    (gap,) = [m for m in missing if m["own"]]
    assert gap["why"].startswith("no C events: a per-CPU file of this set may be missing")
    assert "every trace.blktrace.N file" in gap["capture"]
    assert [m["own"] for m in missing if not m["own"]] == [False, False]  # no ftrace, no offcputime upload


def _bio_based(n: int = 20) -> bytes:
    """A dm device (253,0): its bios queued and completed, never inserted nor dispatched."""
    out, seq = [], 0
    for k in range(n):
        for action, at in (("Q", 1000 * k), ("C", 1000 * k + 700)):
            seq += 1
            comm = "[0]" if action == "C" else "[dd]"
            out.append(f"253,0    0 {seq:8d}     0.{100_000 + at:09d}   77  {action}   W {8 * k} + 8 {comm}")
    return ("\n".join(out) + "\n").encode()


def test_a_bio_based_device_opens_on_q2c(client, store):
    aid = ingest_bytes(store, **{"dm.blkparse.txt": _bio_based()})["id"]
    dispatch, missing, metrics = _caps(client, aid)
    assert metrics == ["q2c"]
    assert dispatch["summary"] == "20 block requests, timed: Q→C 20 (no I/D events)"
    (gap,) = [m for m in missing if m["own"]]
    assert gap["why"].startswith("no I/D events: a bio-based device (dm, md, ...)")
    assert gap["capture"].startswith("blktrace -d /dev/dm-0 -d /dev/sdX")


@needs_public
def test_a_full_capture_lacks_no_phase(client, store):
    aid = ingest_paths(store, PUBLIC / "blkparse-text" / "derived-liuzel01-sda-lvm.blkparse.txt")["id"]
    dispatch, missing, metrics = _caps(client, aid)
    assert metrics == ["i2d", "d2c", "q2c"]
    assert dispatch["summary"] == "109 block requests, timed: I→D 109, D→C 109, Q→C 109"
    assert not [m for m in missing if m["own"]]
