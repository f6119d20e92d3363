"""The events inside a box of a latency heatmap (heatmaps.py: the metrics, their tables and filters): slowest first,
each with what it is (a request's device and sector, a call's function, a wait's lock), and for calls and waits the
wait and chain they belong to. Read from the metric's in-memory index (heatindex.py) when it fits, else in SQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .catalogue import offsets, source_offsets
from .heatmaps import SPECS, Spec, event_index, events_from, indexable, own_bounds
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache

_DETAIL = {  # what an event in a box shows beyond its ref, time and latency (see HeatmapEvent)
    "request": "",
    "call": ", coalesce(a.exit_ns, a.entry_ns + a.duration_ns) AS _end",
    "wait": "",
}


def events(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    metric: str,
    *,
    filter: str | None = None,
    pid=None,
    dev=None,
    t0=None,
    t1=None,
    lat_min=None,
    lat_max=None,
    limit: int = 100,
    live: bool = False,
) -> dict:
    """The events placed in [t0, t1] (aligned, inclusive) with lat_min <= latency < lat_max, slowest first
    (ties in source, line order), at most `limit`, and how many match in all. From the index (which events,
    how many) and the event table (their details) unless live is asked."""
    spec = SPECS[metric]
    if live or not indexable(con, cache, analysis_id, metric, filter, pid, dev):
        total, rows = _box_sql(con, analysis_id, metric, filter, pid, dev, t0, t1, lat_min, lat_max, limit)
    else:
        idx = event_index(con, cache, analysis_id, metric, filter, pid, dev)
        offsets = source_offsets(con, cache, analysis_id)
        total, ranks = idx.box(idx.window(offsets, t0, t1), lat_min, lat_max, limit)
        rows = _details(con, metric, offsets, idx.sid[ranks].tolist(), idx.line[ranks].tolist())
    out = []
    for r in rows:
        e = {
            "ref": {"kind": spec.kind, "source_id": r["source_id"], "line": r["line"], "pid": r["pid"]},
            "t_ns": r["t_ns"],
            "latency_ns": r["latency_ns"],
            "end_known": r.get("end_known", True),
            "comm": r["comm"],
            "dev": r.get("dev"),
            "rwbs": r.get("rwbs"),
            "sector": r.get("sector"),
            "nsect": r.get("nsect"),
            "func": r.get("func"),
            "lock": r.get("lock"),
            "lock_key": r.get("lock_key"),
            "wait": None,
            "chain_id": None,
            "link": None,
        }
        out.append(e)
    if spec.kind == "call" and rows:
        _attach_waits_of_calls(con, cache, analysis_id, rows, out)
    if spec.kind in ("call", "wait") and rows:
        _attach_chains(con, cache, analysis_id, out)
    return {
        "metric": spec.metric,
        "idle": spec.idle,
        "filter": filter,
        "kind": spec.kind,
        "count": total,
        "events": out,
    }


def _columns(spec: Spec, at: str) -> str:
    return (
        f"a.source_id, a.line, a.pid, {at} AS t_ns, a.{spec.value} AS latency_ns, a.{spec.at} AS _start"
        f"{''.join(f', a.{c}' for c in spec.extra)}{_DETAIL[spec.kind]}"
    )


def _box_sql(
    con, analysis_id: str, metric: str, filter, pid, dev, t0, t1, lat_min, lat_max, limit: int
) -> tuple[int, list[dict]]:
    spec = SPECS[metric]
    at, v = f"(a.{spec.at} + s.clock_offset_ns)", f"a.{spec.value}"
    base, params = events_from(metric, analysis_id, filter, pid, dev)
    for cond, name, value in (
        (f"{at} >= $t0", "t0", t0),
        (f"{at} <= $t1", "t1", t1),
        (f"{v} >= $lat_min", "lat_min", lat_min),
        (f"{v} < $lat_max", "lat_max", lat_max),
    ):
        if value is not None:
            base += f" AND {cond}"
            params[name] = value
    base += own_bounds(con, analysis_id, spec, params, t0, t1)
    total = run(con, f"SELECT count(*){base}", params)[0][0]
    return total, run(
        con,
        f"SELECT {_columns(spec, at)}{base} ORDER BY {v} DESC, a.source_id, a.line LIMIT $limit",
        {**params, "limit": limit},
        shape="dicts",
    )


def _details(con, metric: str, offsets: dict[int, int], sids: list[int], lines: list[int]) -> list[dict]:
    """The rows of these events (source_id, line pairs), in that order; times aligned."""
    spec = SPECS[metric]
    found: dict[tuple[int, int], dict] = {}
    for sid in sorted(set(sids)):
        for row in run(
            con,
            f"SELECT {_columns(spec, f'(a.{spec.at} + $off)')} FROM {spec.table} a"
            " WHERE a.source_id = $sid AND a.line IN (SELECT unnest($lines))",
            {"off": offsets[sid], "sid": sid, "lines": [ln for s, ln in zip(sids, lines) if s == sid]},
            shape="dicts",
        ):
            found[(row["source_id"], row["line"])] = row
    return [found[k] for k in zip(sids, lines)]


def _waits_by_task(con, cache: AnalysisCache, analysis_id: str) -> dict:
    """Per (source, pid): its waits by start (own time): starts, durations, lines, lock labels and keys. Read
    once per analysis (kept in the cache): a call's wait is then a binary search, not a join over every wait."""

    def build():
        by: dict = {}
        for sid, pid, start, dur, line, lock, key in run(
            con,
            "SELECT w.source_id, w.pid, w.start_ns, w.duration_ns, w.line, w.lock, w.lock_key FROM waits w"
            " JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = ? ORDER BY 1, 2, 3, 5",
            [analysis_id],
        ):
            by.setdefault((sid, pid), []).append((start, dur, line, lock, key))
        return {
            k: (
                np.array([w[0] for w in ws], np.int64),
                np.array([w[1] for w in ws], np.int64),
                np.array([w[2] for w in ws], np.int64),
                [w[3] for w in ws],
                [w[4] for w in ws],
            )
            for k, ws in by.items()
        }

    return cache.shared(
        (analysis_id, "waits-by-task"),
        build,
        lambda by: sum(a.nbytes + b.nbytes + c.nbytes + 100 * len(d) for a, b, c, d, _ in by.values()),
    )


def _attach_waits_of_calls(con, cache: AnalysisCache, analysis_id: str, rows: list[dict], out: list[dict]) -> None:
    """Each call's longest wait of its task that began while the call ran (same source: its own times; ties:
    the first line)."""
    by_task = _waits_by_task(con, cache, analysis_id)
    for r, e in zip(rows, out):
        found = by_task.get((r["source_id"], r["pid"]))
        if found is None or r["_start"] is None or r["_end"] is None:
            continue
        starts, durs, lines, locks_, keys = found
        a, b = np.searchsorted(starts, r["_start"], "left"), np.searchsorted(starts, r["_end"], "right")
        if a >= b:
            continue
        d = durs[a:b]
        ties = np.flatnonzero(d == d.max())
        i = a + int(ties[np.argmin(lines[a:b][ties])])
        e["wait"] = {"kind": "wait", "source_id": r["source_id"], "line": int(lines[i]), "pid": r["pid"]}
        e["lock"], e["lock_key"] = locks_[i], keys[i]


def _chain_of_wait(con, cache: AnalysisCache, analysis_id: str) -> dict:
    """(source_id, wait line) -> (chain_id, pos) of the link explaining that wait: the link that is it, else
    the link it waits alongside (also_waiting); the best-ranked chain when several. Read once per analysis and
    offsets (chains are linked again when an offset is set)."""

    def build():
        best: dict = {}
        for sid, line, pref, chain_id, pos in run(
            con,
            "SELECT source_id, wait_line, 0, chain_id, pos FROM chain_links"
            " WHERE analysis_id = $aid AND wait_line IS NOT NULL"
            " UNION ALL"
            " SELECT (j->>'source_id')::INTEGER, (j->>'line')::BIGINT, 1, chain_id, pos"
            " FROM chain_links, unnest(json_extract(also_waiting, '$[*]')) AS t(j) WHERE analysis_id = $aid",
            {"aid": analysis_id},
        ):
            rank = (pref, chain_id, pos)
            if best.get((sid, line), rank) >= rank:
                best[(sid, line)] = rank
        return {k: (c, p) for k, (_, c, p) in best.items()}

    return cache.shared((analysis_id, "chain-of-wait", offsets(con, cache, analysis_id)), build, lambda d: 200 * len(d))


def _attach_chains(con, cache: AnalysisCache, analysis_id: str, out: list[dict]) -> None:
    """The chain (and 1-based link) that explains each wait (a call's: the wait inside it)."""
    chains = None
    for e in out:
        w = e["wait"] if e["ref"]["kind"] == "call" else e["ref"]
        if w is None:
            continue
        chains = chains if chains is not None else _chain_of_wait(con, cache, analysis_id)
        found = chains.get((w["source_id"], w["line"]))
        if found is not None:
            e["chain_id"], e["link"] = found[0], found[1] + 1
