"""The flame-graph endpoints on real off-CPU dumps."""

from __future__ import annotations

from tests.conftest import PUBLIC, SAMPLES, SEED, ingest_paths, needs_public

FOLDED = PUBLIC / "offcputime" / "bcc-offcputime-K-f-folded.txt"
SEED_STACK = SEED / "xfs-open-stall.offcputime.txt"


def find(node, name):
    if node["name"] == name:
        return node
    for child in node.get("children", []):
        if (hit := find(child, name)) is not None:
            return hit
    return None


@needs_public
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


@needs_public
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


def _node_sum(node, lock, parent_lock=None):
    """The frames on `lock` summed as the view did before: a frame counted unless its direct caller is on it."""
    own = node["value"] if node.get("lock") == lock and parent_lock != lock else 0
    return own + sum(_node_sum(c, lock, node.get("lock")) for c in node.get("children", []))


def test_lock_totals_count_each_stack_once(client, store):
    """rwsem (write) in the incident's offcputime: down_write → call_rwsem_down_write_failed → rwsem_down_write_failed
    on one stack is one wait (summing its frames counted them twice: 4.61 s for a 2.30 s frame)."""
    aid = ingest_paths(store, SAMPLES / "incident.offcputime.txt")["id"]
    g = client.get(f"/api/analyses/{aid}/flamegraph").json()
    w = {x["lock"]: x for x in g["locks"]}["rwsem (write)"]
    assert w["value"] == find(g["root"], "down_write")["value"]  # every stack on it goes through down_write
    assert _node_sum(g["root"], "rwsem (write)") == 2 * w["value"]  # the old sum: twice
    assert [x["value"] for x in g["locks"]] == sorted((x["value"] for x in g["locks"]), reverse=True)
    f = client.get(f"/api/analyses/{aid}/flamegraph", params={"filter": "xfs_write"}).json()  # the stacks kept only
    assert {x["lock"]: x["value"] for x in f["locks"]}["rwsem (write)"] == w["value"]
    assert all(x["value"] <= f["matched"] for x in f["locks"])
