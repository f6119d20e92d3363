"""Chains of waits (tables `chains`, `chain_links`, by analysis_id), from the waits (derive/waits.py): each wait's next link is
* its waker, when known: if the waker is the idle task / an interrupt (pid 0) or its stack shows an I/O
  completion (IO_COMPLETION, or a release function of locks.py's "I/O" entry) the relation is
  `io_completion` and the chain ends with the waking context; else `woken_by` the waker's own wait that
  overlapped this one (the latest that began before the wake-up, ended at or before it and after this
  wait began), or the waker itself (running) when it had none;
* else its inferred holder: `held_by` the holder's wait that overlapped this one (begun after it took the
  lock), or the holder itself (running);
* else nothing known: the chain ends.
A chain starts at a wait that is no other wait's next link and is worth explaining (a locks.py primitive
on its stack, or state D). Waits on the same lock (`lock_key`: the object, e.g. `xfs_ilock`, whatever the
primitive) with the same next link are one chain: the first link is the one with the longest stall whose
end is known (else the longest), the others are its `also_waiting`. Chains are ranked by the first
link's duration, at most MAX_CHAINS per analysis, MAX_LINKS links each.
An `io_completion` link is matched to a block request of a blkparse source of the same analysis: the one
completed (C) within REQUEST_WINDOW_NS before the wake-up (or REQUEST_SLACK_NS after it, for clock
jitter), preferring a request queued by the waiting task, then the completion closest to the wake-up.
Times are compared on the analysis timeline (each source's clock_offset_ns as it was at ingest).
"""

from __future__ import annotations

import bisect
import itertools
import json
import operator
from collections import defaultdict

import numpy as np
import pyarrow as pa

from ..schema.tables import STACK_SEP
from .blk import REQUEST_SOURCES
from .frames import duration_text, io_completion_in, is_idle_task, is_io_completion, path_mark, task_text, waker_path
from .waits import fetch_dicts, register_table

REQUEST_WINDOW_NS = 10_000_000  # a request completed at most this long before the wake-up caused it
REQUEST_SLACK_NS = 50_000  # ... or this long after it (blktrace and ftrace timestamps jitter)
MAX_CHAINS = 5000
MAX_LINKS = 32


class _WaitsByTask:
    """The waits of one source by task, for 'the wait of task X that overlapped ...' look-ups."""

    def __init__(self, waits: list[dict]):
        self.by_pid: dict[int, list[dict]] = defaultdict(list)
        for w in sorted(waits, key=operator.itemgetter("start_ns", "line")):
            self.by_pid[w["pid"]].append(w)
        self.starts = {pid: [w["start_ns"] for w in ws] for pid, ws in self.by_pid.items()}
        # the latest end among a task's waits up to each: a look-up stops when no earlier wait reaches w's start
        self.reach = {
            pid: list(itertools.accumulate((w["end_ns"] for w in ws), max)) for pid, ws in self.by_pid.items()
        }
        # the I/O completion and lock release functions among the wakers' frames (a set look-up per stack, not a
        # call per frame)
        self.marked = set(filter(path_mark, set().union(*(w["waker_stack"] or () for w in waits))))
        self.io = set(filter(is_io_completion, self.marked))

    def latest_woken(self, w) -> dict | None:
        """latest(waker, wake_ns): a wait of the waker that ended at or before the wake-up, after w began."""
        ws = self.by_pid.get(w["waker_pid"])
        if not ws:
            return None
        wake, start, reach = w["wake_ns"], w["start_ns"], self.reach[w["waker_pid"]]
        j = bisect.bisect_left(self.starts[w["waker_pid"]], wake) - 1
        for k in range(j, max(-1, j - 64), -1):
            if reach[k] <= start:
                break
            v = ws[k]
            if v is not w and v["end_ns"] <= wake and v["end_known"] and v["end_ns"] > start:
                return v
        return None

    def latest_held(self, w, before_ns: int) -> dict | None:
        """latest(holder, before_ns): a wait of the holder begun after it took the lock, ended after w began."""
        ws = self.by_pid.get(w["holder_pid"])
        if not ws:
            return None
        took, start, reach = w["holder_ns"] or 0, w["start_ns"], self.reach[w["holder_pid"]]
        j = bisect.bisect_left(self.starts[w["holder_pid"]], before_ns) - 1
        for k in range(j, max(-1, j - 64), -1):
            v = ws[k]
            if v["start_ns"] < took or reach[k] <= start:  # nor will any earlier one (they began earlier)
                break
            if v["end_ns"] > start:
                return v
        return None


def _next_link(w: dict, idx: _WaitsByTask) -> tuple[str | None, dict | None, tuple | None]:
    """(relation, the next link's wait or None, else (pid, line) of the task that ends the chain, running)."""
    if w["waker_pid"] is not None:
        end = (w["waker_pid"], w["wake_line"])
        if w["waker_stack"] and not idx.io.isdisjoint(w["waker_stack"]):
            return "io_completion", None, end
        if is_idle_task(w["waker_pid"], w["waker_comm"]):
            return "woken_by", None, end
        v = idx.latest_woken(w)
        return "woken_by", v, None if v is not None else end
    if w["holder_pid"] is not None:
        end = w["end_ns"] if w["end_known"] else None
        v = idx.latest_held(w, end if end is not None else 1 << 62)
        return "held_by", v, None if v is not None else (w["holder_pid"], w["holder_line"])
    return None, None, None


def _link_evidence(w: dict, rel: str, v: dict | None, idx: _WaitsByTask) -> tuple[str, dict | None]:
    """The evidence of a link's relation to the next (see _next_link), and the link that ends the chain when no wait
    follows (the waker or the holder itself). Built only for the links stored."""
    if w["waker_pid"] is not None:
        waker = task_text(w["waker_comm"], w["waker_pid"])
        io = io_completion_in(w["waker_stack"]) if rel == "io_completion" else None
        via = waker_path(w["waker_stack"], idx.marked)
        term = {
            "pid": w["waker_pid"],
            "comm": w["waker_comm"],
            "lock": None,
            "start_ns": w["wake_ns"],
            "end_ns": w["wake_ns"],
            "duration_ns": 0,
            "end_known": True,
            "stack": w["waker_stack"] or [],
            "line": w["wake_line"],
            "source_id": w["source_id"],
            "inferred": False,
        }
        if io or is_idle_task(w["waker_pid"], w["waker_comm"]):
            ctx = "an interrupt on the idle CPU" if is_idle_task(w["waker_pid"], w["waker_comm"]) else waker
            term["evidence"] = f"{ctx} woke {task_text(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
            return (
                f"woken at line {w['wake_line']} by {waker} in the I/O completion {io}()"
                if io
                else f"woken at line {w['wake_line']} by {ctx}"
            ), term
        ev = f"woken at line {w['wake_line']} by {waker} from {via}"
        if v is not None:
            return ev + f"; {waker} had itself waited from line {v['line']}", None
        term["evidence"] = f"running: woke {task_text(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
        return ev, term
    if v is not None:
        return w["holder_evidence"], None
    return w["holder_evidence"], {
        "pid": w["holder_pid"],
        "comm": w["holder_comm"],
        "lock": None,
        "start_ns": w["start_ns"],
        "end_ns": w["end_ns"],
        "duration_ns": None,
        "end_known": w["end_known"],
        "stack": w["holder_stack"] or [],
        "line": w["holder_line"],
        "source_id": w["source_id"],
        "inferred": True,
        "evidence": f"holds the lock and shows no wait of its own that overlaps ({w['holder_evidence']})",
    }


def _chains_from_stored_waits(con, analysis_id: str, sids: list[int]) -> None:
    """The analysis' chains from its stored waits."""
    if not sids:
        return
    rows = fetch_dicts(
        con.execute(
            "SELECT w.*, s.clock_offset_ns AS off FROM waits w JOIN sources s ON s.id = w.source_id"
            " WHERE s.analysis_id = ?",
            [analysis_id],
        )
    )
    by_source: dict[int, list[dict]] = defaultdict(list)
    for w in rows:
        by_source[w["source_id"]].append(w)
    chains = build_chains(by_source)
    match_requests(con, analysis_id, chains)
    insert_chains(con, analysis_id, chains)


def build_chains(by_source: dict[int, list[dict]]) -> list[dict]:
    """The chains of the waits (each source's, with every column of `waits`, and `off`: its clock offset)."""
    heads = [h for ws in by_source.values() for h in _source_heads(ws)]
    # a chain's rank is its first link's: only the chains kept are built
    heads.sort(key=lambda h: (-h[0]["duration_ns"], h[0]["source_id"], h[0]["line"]))
    return [_build_chain(h, ctx) for h, ctx in heads[:MAX_CHAINS]]


def _also_waiting_entry(w: dict) -> str:
    """A wait as an entry of a link's also_waiting (JSON)."""
    return json.dumps(
        {
            "pid": w["pid"],
            "comm": w["comm"],
            "lock": w["lock"],
            "source_id": w["source_id"],
            "line": w["line"],
            "start_ns": w["start_ns"],
            "end_ns": w["end_ns"],
            "duration_ns": w["duration_ns"],
            "end_known": w["end_known"],
            "inferred": w["inferred"],
        }
    )


class _Group:
    """The waiters of one group (same lock, same next link; in file order), for 'which of them overlap this wait'
    look-ups: by a look at each, or as arrays when there are many (a group may have thousands of members). Each
    member's JSON is made once."""

    ARRAYS = 64  # members from which the arrays cost less than a look at each

    def __init__(self, members: list[dict]):
        self.members = members
        self.entries: dict[int, str] = {}
        self.starts = self.ends = None
        if len(members) >= self.ARRAYS:
            self.starts = np.fromiter((m["start_ns"] for m in members), np.int64, len(members))
            self.ends = np.fromiter((m["end_ns"] for m in members), np.int64, len(members))

    def overlapping(self, w: dict) -> str:
        """The other members that overlap w in time, in file order, as a JSON list."""
        members, entries, s, e = self.members, self.entries, w["start_ns"], w["end_ns"]
        if self.starts is None:
            hits = [i for i, m in enumerate(members) if m["start_ns"] < e and m["end_ns"] > s]
        else:
            hits = np.flatnonzero((self.starts < e) & (self.ends > s)).tolist()
        return (
            "["
            + ", ".join(
                entries.get(i) or entries.setdefault(i, _also_waiting_entry(members[i]))
                for i in hits
                if members[i] is not w
            )
            + "]"
        )


def _source_heads(ws: list[dict]) -> list[tuple[dict, tuple]]:
    """The first links of the source's chains, each with what building its chain needs."""
    idx = _WaitsByTask(ws)
    nxt = {}
    targets = set()
    for w in ws:
        n = nxt[id(w)] = _next_link(w, idx)
        if n[1] is not None:
            targets.add(id(n[1]))
    # waiters on the same lock with the same next link: one group
    groups: dict[tuple, list[dict]] = defaultdict(list)
    gkey = {}
    for w in ws:
        rel, v, end = nxt[id(w)]
        if rel is None or w["lock_key"] is None:
            continue
        tgt = ("w", v["line"]) if v is not None else ("t", *end)
        gkey[id(w)] = (w["lock_key"], rel, tgt)
        groups[gkey[id(w)]].append(w)
    ctx = (nxt, groups, gkey, idx, {})  # {}: the groups' look-ups (_Group), made as needed
    heads = []
    seen_groups = set()
    for w in ws:
        if id(w) in targets or not (w["primitive"] is not None or (w["state"] or "").startswith("D")):
            continue
        g = gkey.get(id(w))
        if g is not None:
            if g in seen_groups:
                continue
            seen_groups.add(g)
            members = [m for m in groups[g] if id(m) not in targets]
            w = max(members, key=lambda m: (m["end_known"], m["duration_ns"], -m["line"]))
        heads.append((w, ctx))
    return heads


def _build_chain(h: dict, ctx: tuple) -> dict:
    nxt, groups, gkey, idx, looked = ctx

    def also(w):
        k = gkey.get(id(w))
        if k is None:
            return "[]"
        return (looked.get(k) or looked.setdefault(k, _Group(groups[k]))).overlapping(w)

    links, seen, w = [], set(), h
    while w is not None and len(links) < MAX_LINKS:
        seen.add(id(w))
        rel, v, _ = nxt[id(w)]
        rel_ev, term = _link_evidence(w, rel, v, idx) if rel else ("", None)
        evidence = w["evidence"] + (f"; {w['holder_evidence']}" if rel == "held_by" and w["holder_evidence"] else "")
        if rel and rel != "held_by":
            evidence += f"; {rel_ev}"
        links.append(
            {
                "source_id": w["source_id"],
                "wait_line": w["line"],
                "pid": w["pid"],
                "comm": w["comm"],
                "lock": w["lock"],
                "start_ns": w["start_ns"],
                "end_ns": w["end_ns"],
                "duration_ns": w["duration_ns"],
                "end_known": w["end_known"],
                "relation": rel,
                "inferred": bool(w["inferred"] or rel == "held_by"),
                "evidence": evidence,
                "stack": w["stack"],
                "line": w["line"],
                "also_waiting": also(w),
                "_wait": w,
            }
        )
        if term is not None:
            links.append({**term, "wait_line": None, "relation": None, "also_waiting": "[]"})
            break
        w = v if v is not None and id(v) not in seen else None
    return {"duration_ns": h["duration_ns"], "links": links}


def match_requests(con, analysis_id: str, chains: list[dict]) -> None:
    todo = [
        (ci, li, link)
        for ci, c in enumerate(chains)
        for li, link in enumerate(c["links"])
        if link["relation"] == "io_completion" and link.get("_wait") is not None
    ]
    if not todo:
        return
    blk = con.execute(
        f"SELECT count(*) FROM sources s WHERE s.analysis_id = ? AND {REQUEST_SOURCES}", [analysis_id]
    ).fetchall()[0][0]
    if not blk:
        return
    register_table(
        con,
        "_stalls_io",
        {
            "k": list(range(len(todo))),
            "wake": [link["_wait"]["wake_ns"] + (link["_wait"]["off"] or 0) for _, _, link in todo],
            "pid": [link["pid"] for _, _, link in todo],
        },
        {"k": pa.int64(), "wake": pa.int64(), "pid": pa.int64()},
    )
    rows = fetch_dicts(
        con.execute(
            f"""
        WITH r AS (
            SELECT r.source_id, r.line, r.dev, r.sector, r.nsect, r.rwbs, r.pid, r.comm, r.q_ns, r.i_ns, r.d_ns, r.c_ns,
                   r.c_ns + s.clock_offset_ns AS c_at
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE s.analysis_id = $aid AND {REQUEST_SOURCES} AND r.c_ns IS NOT NULL
        )
        SELECT l.k, r.* EXCLUDE (c_at), r.c_at - l.wake AS delta
        FROM _stalls_io l JOIN r ON r.c_at BETWEEN l.wake - $win AND l.wake + $slack
        QUALIFY row_number() OVER (PARTITION BY l.k ORDER BY (r.pid = l.pid) DESC NULLS LAST, (r.c_at <= l.wake) DESC,
                                   abs(r.c_at - l.wake), r.source_id, r.line) = 1
        """,
            {"aid": analysis_id, "win": REQUEST_WINDOW_NS, "slack": REQUEST_SLACK_NS},
        )
    )
    con.unregister("_stalls_io")
    for r in rows:
        _, _, link = todo[r["k"]]
        link["request"] = r
        d = -r["delta"]
        when = f"{duration_text(abs(d))} {'before' if d >= 0 else 'after'}"
        link["evidence"] += (
            f"; block request {r['dev']} {r['rwbs'] or ''} {r['sector']} + {r['nsect']} completed "
            f"{when} the wake-up (blktrace source {r['source_id']}, line {r['line']})"
        )


_LINK_TYPES = {
    "source_id": pa.int32(),
    "wait_line": pa.int64(),
    "pid": pa.int64(),
    "comm": pa.string(),
    "lock": pa.string(),
    "start_ns": pa.int64(),
    "end_ns": pa.int64(),
    "duration_ns": pa.int64(),
    "end_known": pa.bool_(),
    "relation": pa.string(),
    "inferred": pa.bool_(),
    "evidence": pa.string(),
    "line": pa.int64(),
}
_REQUEST_TYPES = {
    "source_id": pa.int32(),
    "line": pa.int64(),
    "dev": pa.string(),
    "sector": pa.int64(),
    "nsect": pa.int64(),
    "rwbs": pa.string(),
    "pid": pa.int64(),
    "comm": pa.string(),
    "q_ns": pa.int64(),
    "i_ns": pa.int64(),
    "d_ns": pa.int64(),
    "c_ns": pa.int64(),
}


def insert_chains(con, analysis_id: str, chains: list[dict]) -> None:
    if not chains:
        return
    register_table(
        con,
        "_stalls_ch",
        {
            "chain_id": list(range(1, len(chains) + 1)),
            "duration_ns": [c["duration_ns"] for c in chains],
            "links": [len(c["links"]) for c in chains],
        },
        {"chain_id": pa.int32(), "duration_ns": pa.int64(), "links": pa.int32()},
    )
    con.execute("INSERT INTO chains SELECT ?, chain_id, duration_ns, links FROM _stalls_ch", [analysis_id])
    con.unregister("_stalls_ch")
    links = [link for c in chains for link in c["links"]]
    data = {
        "chain_id": pa.array([i + 1 for i, c in enumerate(chains) for _ in c["links"]], pa.int32()),
        "pos": pa.array([pos for c in chains for pos in range(len(c["links"]))], pa.int32()),
        "also_waiting": pa.array([link["also_waiting"] for link in links], pa.string()),
    }
    values = zip(*map(operator.itemgetter(*_LINK_TYPES), links))  # column by column
    data.update({k: pa.array(v, t) for (k, t), v in zip(_LINK_TYPES.items(), values)})
    data["stack_text"] = pa.array([STACK_SEP.join(link["stack"]) for link in links], pa.string())
    matched = [(i, link["request"]) for i, link in enumerate(links) if link.get("request")]
    for k, t in _REQUEST_TYPES.items():
        col = [None] * len(links)
        for i, r in matched:
            col[i] = r[k]
        data[f"req_{k}"] = pa.array(col, t)
    con.register("_stalls_cl", pa.table(data))
    names = ", ".join(data)
    con.execute(f"INSERT INTO chain_link_rows (analysis_id, {names}) SELECT ?, {names} FROM _stalls_cl", [analysis_id])
    con.unregister("_stalls_cl")


def relink(con, analysis_id: str) -> None:
    """Builds the analysis' chains again from its stored waits, after a source's clock offset changed: which block
    request completed at a wake-up depends on it (inside the caller's transaction)."""
    con.execute("DELETE FROM chain_link_rows WHERE analysis_id = ?", [analysis_id])
    con.execute("DELETE FROM chains WHERE analysis_id = ?", [analysis_id])
    sids = [
        r[0]
        for r in con.execute(
            "SELECT id FROM sources WHERE analysis_id = ? AND format = 'ftrace' ORDER BY id", [analysis_id]
        ).fetchall()
    ]
    _chains_from_stored_waits(con, analysis_id, sids)
