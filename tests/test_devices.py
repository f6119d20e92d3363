"""Devices named where the capture names them (backend/queries/devices.py): a blktrace set named after its disk."""

from __future__ import annotations

from backend.queries import devices
from tests.conftest import PUBLIC, ingest_paths, needs_public

LIUZEL = PUBLIC / "blktrace-binary" / "liuzel01-sda"
KEKS = PUBLIC / "blktrace-binary" / "isotopp-keks"


def test_a_set_named_after_its_disk_names_it():
    assert devices.names("sda.blktrace.0-1", ["8,0"]) == {"8,0": "sda"}
    assert devices.names("nvme0n1.blktrace.3", ["259,0"]) == {"259,0": "nvme0n1"}
    # several devices (a partition's remaps): the disk the kernel numbers so; a name it does not fix names none
    assert devices.names("sdb.blktrace.0-1", ["8,16", "8,17"]) == {"8,16": "sdb"}
    assert devices.names("loop3.blktrace.0", ["7,3", "253,0"]) == {"7,3": "loop3"}
    assert devices.names("nvme0n1.blktrace.0", ["259,0", "259,3"]) == {}
    # named otherwise, or not a set: the number alone
    assert devices.names("keks.blktrace.0-7", ["8,52"]) == {}
    assert devices.names("sda.blkparse.txt", ["8,0"]) == {}
    assert devices.label("8,0", {"8,0": "sda"}) == "8,0 (sda)"
    assert devices.label("8,52", {}) == "8,52 (device)"


@needs_public
def test_the_timeline_names_the_traced_disk_of_a_real_set(store, client):
    aid = ingest_paths(store, *sorted(LIUZEL.iterdir()), *sorted(KEKS.iterdir()))["id"]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 200}).json()
    labels = sorted(lane["label"] for lane in t["lanes"] if lane["kind"] == "device")
    assert "8,0 (sda)" in labels  # liuzel01's sda.blktrace.0-1
    assert "8,52 (device)" in labels  # keks.blktrace.*: the set names no device
