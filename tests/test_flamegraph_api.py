"""The flame-graph endpoints on real off-CPU dumps."""
from __future__ import annotations

from tests.conftest import PUBLIC, SEED, ingest_paths

FOLDED = PUBLIC / "offcputime" / "bcc-offcputime-K-f-folded.txt"
SEED_STACK = SEED / "xfs-open-stall.offcputime.txt"


def find(node, name):
    if node["name"] == name:
        return node
    for child in node.get("children", []):
        if (hit := find(child, name)) is not None:
            return hit
    return None


def test_tree_units_filter_and_lock_marks(client, store):
    aid = ingest_paths(store, FOLDED, SEED_STACK)["id"]
    us = client.get(f"/api/analyses/{aid}/flamegraph").json()
    assert (us["unit"], us["total"], us["root"]["value"]) == ("us", 184680988, 184680988)  # the folded file's sum
    first = [c["name"] for c in us["root"]["children"]][:3]
    assert first[0] == "supervise"  # tasks at the root, largest first (40876660 µs, checked with awk)
    assert find(us["root"], "supervise")["value"] == 40876660

    # the seed's stack has no total: it shows when stacks are counted, and its lock frames are marked
    n = client.get(f"/api/analyses/{aid}/flamegraph", params={"unit": "stacks", "filter": "xfs_buf_lock"}).json()
    assert (n["total"], n["matched"]) == (48, 1)  # 47 folded lines + 1 hand-quoted stack
    buf = find(n["root"], "xfs_buf_lock")
    assert (buf["value"], buf["lock"]) == (1, "xfs_buf_lock")
    # marked with the lock of /api/locks they take (what /waits?lock_key= takes): the call and its slow path alike
    assert find(n["root"], "down")["lock"] == "semaphore"
    assert find(n["root"], "__down")["lock"] == "semaphore"
    assert "lock" not in find(n["root"], "_xfs_buf_find") and "lock" not in find(n["root"], "schedule_timeout")
    assert n["root"]["children"][0]["name"] == "?"  # the excerpt has no comm line

    # inverted: every one of the 47 folded stacks ends in schedule (checked with awk on the last frame)
    inv = client.get(f"/api/analyses/{aid}/flamegraph", params={"invert": True, "by_task": False}).json()
    assert [(c["name"], c["value"]) for c in inv["root"]["children"]] == [("schedule", 184680988)]


def test_diff_and_tasks(client, store):
    a = ingest_paths(store, FOLDED)["id"]
    b = ingest_paths(store, FOLDED, SEED_STACK)["id"]
    d = client.get(f"/api/analyses/{a}/flamegraph/diff", params={"b_analysis": b, "unit": "stacks"}).json()
    assert (d["total_a"], d["total_b"]) == (47, 48)
    assert find(d["root"], "xfs_buf_lock")["delta"] == 1
    assert find(d["root"], "supervise")["delta"] == 0
    tasks = client.get(f"/api/analyses/{a}/offcpu-tasks", params={"limit": 2}).json()
    assert tasks[0] == {"comm": "supervise", "pid": None, "value_us": 40876660, "stacks": 2}
    assert client.get("/api/locks").json()[0]["name"] == "mutex"
