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
on its stack, or state D, and not idle: wait_kinds.py). Waits on the same lock (`lock_key`: the object, e.g.
`xfs_ilock`, whatever the primitive) with the same next link are one chain: the first link is the one with the longest stall whose
end is known (else the longest), the others are its `also_waiting`. Chains are ranked by the first
link's duration, at most MAX_CHAINS per analysis, MAX_LINKS links each.
An `io_completion` link is matched to a block request of a blkparse source of the same analysis: the one
completed (C) within REQUEST_WINDOW_NS before the wake-up (or REQUEST_SLACK_NS after it, for clock
jitter), preferring a request queued by the waiting task, then the completion closest to the wake-up; else,
when the completion ran late (a workqueue's I/O end, a busy machine), the I/O that was already in flight when
the wait began and completed last before the wake-up.
Times are compared on the analysis timeline (each source's clock_offset_ns as it was at ingest).
"""

from __future__ import annotations

import json
import operator
from collections import defaultdict

import numpy as np
import pyarrow as pa

from .. import block_layers
from ..block_layers import REQUEST_SOURCES
from ..db import execute
from ..schema.tables import STACK_SEP
from .chain_plan import RELATIONS, find_also, plan
from .frames import FrameKinds, duration_text, is_idle_task, task_text
from .sql_io import fetch_dicts, register_table
from .wait_rows import insert_arrow

REQUEST_WINDOW_NS = 10_000_000  # a request completed at most this long before the wake-up caused it
REQUEST_SLACK_NS = 50_000  # ... or this long after it (blktrace and ftrace timestamps jitter)


def _link_evidence(w: dict, rel: str, v: dict | None, kinds: FrameKinds) -> tuple[str, dict | None]:
    """The evidence of a link's relation to the next (see chain_plan), and the link that ends the chain when no wait
    follows (the waker or the holder itself). Built only for the links stored."""
    if w["waker_pid"] is not None:
        waker = task_text(w["waker_comm"], w["waker_pid"])
        frames = _frames(w["waker_stack_text"])
        io = kinds.io_completion_in(frames) if rel == "io_completion" else None
        via = kinds.waker_path(frames)
        term = {
            "pid": w["waker_pid"],
            "comm": w["waker_comm"],
            "lock": None,
            "start_ns": w["wake_ns"],
            "end_ns": w["wake_ns"],
            "duration_ns": 0,
            "end_known": True,
            "stack_text": w["waker_stack_text"] or "",
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
        "stack_text": w["holder_stack_text"] or "",
        "line": w["holder_line"],
        "source_id": w["source_id"],
        "inferred": True,
        "evidence": f"holds the lock and shows no wait of its own that overlaps ({w['holder_evidence']})",
    }


def _frames(text: str | None) -> list[str] | None:
    """A stored stack's frames (as the `waits` view reads them)."""
    return None if text is None else text.split(STACK_SEP) if text else []


def chain_columns(waits: list[dict], kinds: FrameKinds) -> dict:
    """What chain_plan needs of waits given as rows (dicts with every column of `wait_rows`), in their order."""

    def ints(key: str) -> np.ndarray:
        return np.fromiter((w[key] or 0 for w in waits), np.int64, len(waits))

    def flags(test) -> np.ndarray:
        return np.fromiter(map(test, waits), bool, len(waits))

    cols = {k: ints(k) for k in ("line", "pid", "start_ns", "end_ns", "duration_ns", "wake_ns", "wake_line")}
    cols.update({k: ints(k) for k in ("waker_pid", "holder_pid", "holder_ns", "holder_line")})
    cols["end_known"] = flags(lambda w: bool(w["end_known"]))
    cols["waker"] = flags(lambda w: w["waker_pid"] is not None)
    cols["waker_idle"] = flags(lambda w: is_idle_task(w["waker_pid"], w["waker_comm"]))
    cols["waker_io"] = flags(lambda w: any(map(kinds.is_io_completion, _frames(w["waker_stack_text"]) or ())))
    cols["holder"] = flags(lambda w: w["holder_pid"] is not None)
    cols["worthy"] = flags(
        lambda w: (w["primitive"] is not None or (w["state"] or "").startswith("D")) and w.get("wait_kind") != "idle"
    )
    cols["lock_key"] = [w["lock_key"] for w in waits]
    return cols


def stored_rows(con, plans: list[tuple]) -> dict:
    """rows_of for build_chains from the stored waits (the ingest's, once inserted): the rows of the waits the
    chains need, by (source, line), with `off` (the source's clock offset)."""
    need: dict[int, set] = defaultdict(set)
    find_also(plans)
    for p, _, links in plans:
        lines = p.cols["line"]
        for w in links:
            need[p.sid].add(int(lines[w]))
            need[p.sid].update(lines[p.also(w)].tolist())
            if p.nxt[w] >= 0:
                need[p.sid].add(int(lines[p.nxt[w]]))
    rows = {}
    for sid, lines in need.items():
        register_table(con, "_stalls_need", {"line": sorted(lines)}, {"line": pa.int64()})
        try:
            got = fetch_dicts(
                execute(
                    con,
                    "SELECT w.*, s.clock_offset_ns AS off FROM wait_rows w JOIN sources s ON s.id = w.source_id"
                    " WHERE w.source_id = ? AND w.line IN (SELECT line FROM _stalls_need)",
                    [sid],
                )
            )
        finally:
            con.unregister("_stalls_need")
        rows.update(((sid, w["line"]), w) for w in got)
    return rows


def build_chains(plans: list[tuple], rows: dict, kinds: FrameKinds) -> list[dict]:
    """The chains of chain_plan.plan, with every link's row (`rows`: by (source, line), e.g. stored_rows); `kinds`:
    the derivation's look-ups of what the wakers' frames are."""
    entries: dict[tuple, str] = {}
    find_also(plans)  # (found already when the rows were: stored_rows)

    def row(p, w: int) -> dict:
        return rows[(p.sid, int(p.cols["line"][w]))]

    def also(p, w: int) -> str:
        out = []
        for m in p.also(w):
            k = (p.sid, m)
            if k not in entries:
                entries[k] = _also_waiting_entry(row(p, m))
            out.append(entries[k])
        return "[" + ", ".join(out) + "]"

    chains = []
    for p, h, walk in plans:
        links = []
        for x in walk:
            w = row(p, x)
            rel = RELATIONS[p.rel[x]]
            v = row(p, int(p.nxt[x])) if p.nxt[x] >= 0 else None
            rel_ev, term = _link_evidence(w, rel, v, kinds) if rel else ("", None)
            evidence = w["evidence"] + (
                f"; {w['holder_evidence']}" if rel == "held_by" and w["holder_evidence"] else ""
            )
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
                    "stack_text": w["stack_text"],
                    "line": w["line"],
                    "also_waiting": also(p, x),
                    "_wait": w,
                }
            )
            if term is not None:
                links.append({**term, "wait_line": None, "relation": None, "also_waiting": "[]"})
                break
        chains.append({"duration_ns": row(p, h)["duration_ns"], "links": links})
    return chains


def _chains_from_stored_waits(con, analysis_id: str, sids: list[int]) -> None:
    """The analysis' chains from its stored waits."""
    if not sids:
        return
    rows = fetch_dicts(
        execute(
            con,
            "SELECT w.*, s.clock_offset_ns AS off FROM wait_rows w JOIN sources s ON s.id = w.source_id"
            " WHERE s.analysis_id = ?",
            [analysis_id],
        )
    )
    by_source: dict[int, list[dict]] = defaultdict(list)
    for w in rows:
        by_source[w["source_id"]].append(w)
    kinds = FrameKinds()  # this relink's look-ups of the wakers' frames, dropped with it
    plans = plan([(sid, chain_columns(ws, kinds)) for sid, ws in by_source.items()])
    chains = build_chains(plans, {(w["source_id"], w["line"]): w for w in rows}, kinds)
    match_requests(con, analysis_id, chains)
    insert_chains(con, analysis_id, chains)


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


def match_requests(con, analysis_id: str, chains: list[dict]) -> None:
    todo = [
        (ci, li, link)
        for ci, c in enumerate(chains)
        for li, link in enumerate(c["links"])
        if link["relation"] == "io_completion" and link.get("_wait") is not None
    ]
    if not todo:
        return
    stacks = block_layers.Layers(lambda sql, p: fetch_dicts(execute(con, sql, p)), analysis_id)
    if not stacks.sources:
        return
    register_table(
        con,
        "_stalls_io",
        {
            "k": list(range(len(todo))),
            "wake": [link["_wait"]["wake_ns"] + (link["_wait"]["off"] or 0) for _, _, link in todo],
            "began": [link["_wait"]["start_ns"] + (link["_wait"]["off"] or 0) for _, _, link in todo],
            "pid": [link["pid"] for _, _, link in todo],
        },
        {"k": pa.int64(), "wake": pa.int64(), "began": pa.int64(), "pid": pa.int64()},
    )
    rows = fetch_dicts(
        execute(
            con,
            f"""
        WITH r AS (
            SELECT r.source_id, r.line, r.dev, r.sector, r.nsect, r.rwbs, r.pid, r.comm, r.q_ns, r.i_ns, r.d_ns, r.c_ns,
                   r.c_ns + s.clock_offset_ns AS c_at, coalesce(r.q_ns, r.i_ns, r.d_ns) + s.clock_offset_ns AS q_at,
                   s.format = 'blkparse' AS blktrace
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE s.analysis_id = $aid AND {REQUEST_SOURCES} AND r.c_ns IS NOT NULL
        )
        SELECT l.k, r.* EXCLUDE (c_at, q_at), r.c_at - l.wake AS delta, r.c_at < l.wake - $win AS in_flight
        FROM _stalls_io l JOIN r ON r.c_at BETWEEN l.wake - $win AND l.wake + $slack
            OR r.q_at < l.began AND r.c_at BETWEEN l.began AND l.wake
        QUALIFY row_number() OVER (PARTITION BY l.k ORDER BY in_flight, (r.pid = l.pid) DESC NULLS LAST,
                                   (r.c_at <= l.wake) DESC, abs(r.c_at - l.wake), r.source_id, r.line) = 1
        """,
            {"aid": analysis_id, "win": REQUEST_WINDOW_NS, "slack": REQUEST_SLACK_NS},
        )
    )
    con.unregister("_stalls_io")
    layered = stacks.of_many([(r["source_id"], r["line"]) for r in rows])
    holders = [block_layers.holder(stack) for stack in layered]
    moved = [  # the layer that held each I/O longest, when it is not the request matched
        (h["source_id"], h["line"])
        if h is not None and (h["source_id"], h["line"]) != (r["source_id"], r["line"])
        else None
        for r, h in zip(rows, holders)
    ]
    held_rows = _request_rows(con, [key for key in moved if key])
    for r, stack, held, moved_to in zip(rows, layered, holders, moved):
        _, _, link = todo[r["k"]]
        d = -r["delta"]
        when = f"{duration_text(abs(d))} {'before' if d >= 0 else 'after'}"
        link["evidence"] += (
            f"; block request {r['dev']} {r['rwbs'] or ''} {r['sector']} + {r['nsect']} completed "
            + ("(in flight when the wait began: the last such I/O to complete) " if r.pop("in_flight") else "")
            + f"{when} the wake-up ("
            + (f"blktrace source {r['source_id']}" if r.pop("blktrace") else "rebuilt from the trace's block events")
            + f", line {r['line']})"
        )
        if moved_to:
            r = {**held_rows[moved_to], "k": r["k"], "delta": r["delta"]}
        if stack:
            link["evidence"] += "; " + _layers_text(stack, held)
        link["request"] = r


def _request_rows(con, keys: list[tuple[int, int]]) -> dict[tuple[int, int], dict]:
    """Requests' columns as a chain link keeps them (times: their source's own), by (source_id, line)."""
    if not keys:
        return {}
    rows = fetch_dicts(
        execute(
            con,
            f"SELECT {', '.join(f'r.{c}' for c in _REQUEST_TYPES)} FROM blk_requests r"
            " JOIN (SELECT unnest($sid) AS sid, unnest($line) AS line) k ON r.source_id = k.sid AND r.line = k.line",
            {"sid": [s for s, _ in keys], "line": [ln for _, ln in keys]},
        )
    )
    return {(r["source_id"], r["line"]): r for r in rows}


def _layers_text(stack: list[dict], held: dict | None) -> str:
    """Where the I/O's time went, layer by layer (block_layers), and which layer held it."""
    parts = [
        f"{block_layers.device_text(x)} {'held it' if x is not stack[-1] else 'served it in'} "
        f"{duration_text(x['held_ns']) if x['held_ns'] is not None else 'an unknown time'}"
        + ("" if x is stack[-1] else " before passing it down")
        for x in stack
    ]
    text = f"the I/O went through {len(stack)} block layers: " + ", then ".join(parts)
    if held is not None:
        text += f"; held longest by {block_layers.device_text(held)} (line {held['line']})"
    return text


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
    execute(con, "INSERT INTO chains SELECT ?, chain_id, duration_ns, links FROM _stalls_ch", [analysis_id])
    con.unregister("_stalls_ch")
    links = [link for c in chains for link in c["links"]]
    data = {
        "chain_id": pa.array([i + 1 for i, c in enumerate(chains) for _ in c["links"]], pa.int32()),
        "pos": pa.array([pos for c in chains for pos in range(len(c["links"]))], pa.int32()),
        "also_waiting": pa.array([link["also_waiting"] for link in links], pa.string()),
    }
    values = zip(*map(operator.itemgetter(*_LINK_TYPES), links))  # column by column
    data.update({k: pa.array(v, t) for (k, t), v in zip(_LINK_TYPES.items(), values)})
    data["stack_text"] = pa.array([link["stack_text"] for link in links], pa.string())
    matched = [(i, link["request"]) for i, link in enumerate(links) if link.get("request")]
    for k, t in _REQUEST_TYPES.items():
        col = [None] * len(links)
        for i, r in matched:
            col[i] = r[k]
        data[f"req_{k}"] = pa.array(col, t)
    data["analysis_id"] = pa.array([analysis_id] * len(links), pa.string())
    order = [d[0] for d in execute(con, "SELECT * FROM chain_link_rows LIMIT 0").description]
    insert_arrow(con, "chain_link_rows", pa.table({k: data[k] for k in order}))


def relink(con, analysis_id: str) -> None:
    """Builds the analysis' chains again from its stored waits, after a source's clock offset changed: which block
    request completed at a wake-up depends on it (inside the caller's transaction)."""
    execute(con, "DELETE FROM chain_link_rows WHERE analysis_id = ?", [analysis_id])
    execute(con, "DELETE FROM chains WHERE analysis_id = ?", [analysis_id])
    sids = [
        r[0]
        for r in execute(
            con, "SELECT id FROM sources WHERE analysis_id = ? AND format = 'ftrace' ORDER BY id", [analysis_id]
        ).fetchall()
    ]
    _chains_from_stored_waits(con, analysis_id, sids)
