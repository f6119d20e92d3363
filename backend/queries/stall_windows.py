"""What a window of the Stalls view is found from in memory (kept in the AnalysisCache's answers per clock offsets:
a PATCH relinks the chains and moves the times, and forgets): every chain built as `stalls.chains` answers it, and
every wait ranked for the lists. A window's chains are then picked from memory, and a window's waits are found there
and read whole by their ids (one query of the rows asked for, not a search of the tables: a window's read cost
~10 ms of small queries before, on a server answering 30 readers at once).

The figures: at most derive/chain_plan.MAX_CHAINS chains (a few MB of JSON at most); five 8-byte columns per wait
(~4 MB for 100 k waits)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from .. import locks, wait_kinds
from ..schema.tables import aligned_by
from .catalogue import offsets
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache


# ---- chains --------------------------------------------------------------------------------------------------------


class BuiltChains:
    """An analysis' chains by rank (id): its first link's wait (aligned start and end) and its JSON text."""

    def __init__(self, ids: list[int], starts: list[int], ends: list[int], texts: list[bytes]):
        self.ids, self.starts, self.ends, self.texts = ids, starts, ends, texts
        self.nbytes = sum(len(t) for t in texts) + 100 * len(ids)

    def select(self, limit: int, t0=None, t1=None) -> list[bytes]:
        """The JSON texts of the first `limit` chains whose first link's wait overlaps [t0, t1] (None: open)."""
        out = []
        for i, (s, e) in enumerate(zip(self.starts, self.ends)):
            if (t0 is None or e >= t0) and (t1 is None or s <= t1):
                out.append(self.texts[i])
                if len(out) == limit:
                    break
        return out


def built_chains(con, cache: AnalysisCache, analysis_id: str) -> BuiltChains:
    return cache.shared(
        (analysis_id, "chains-built", offsets(con, cache, analysis_id)),
        lambda: _build_chains(con, analysis_id),
        lambda built: built.nbytes,
    )


def chain_texts(con, cache: AnalysisCache, analysis_id: str, limit: int, t0=None, t1=None) -> list[bytes]:
    """The JSON texts of the first `limit` chains whose first link's wait overlaps [t0, t1] (None: open), from every
    chain built (kept); with no window and none kept, from the first `limit` built alone, not kept (the whole
    analysis' first view, at ingest: not every chain's links, ~55 k for a 1 GiB function_graph capture; the warm-up
    builds them all after the upload)."""
    if t0 is None and t1 is None and not cache.kept((analysis_id, "chains-built", offsets(con, cache, analysis_id))):
        return _build_chains(con, analysis_id, limit).select(limit)
    return built_chains(con, cache, analysis_id).select(limit, t0, t1)


def _build_chains(con, analysis_id: str, first: int | None = None) -> BuiltChains:
    """Every chain by rank, or the `first` ones."""
    heads = run(
        con,
        "SELECT c.chain_id, c.duration_ns FROM chains c JOIN chain_links l ON l.analysis_id = c.analysis_id"
        " AND l.chain_id = c.chain_id AND l.pos = 0 WHERE c.analysis_id = $aid ORDER BY c.chain_id"
        + ("" if first is None else f" LIMIT {int(first)}"),
        {"aid": analysis_id},
        max_rows=1 << 20,
    )
    last = heads[-1][0] if first is not None and heads else None  # the links of the chains up to it
    # times on the analysis timeline: each link's source offset, the request's its blktrace source's
    links = run(
        con,
        "SELECT l.* EXCLUDE (analysis_id, stack_text) REPLACE (l.start_ns + s.clock_offset_ns AS start_ns,"
        " l.end_ns + s.clock_offset_ns AS end_ns, l.req_q_ns + r.clock_offset_ns AS req_q_ns,"
        " l.req_i_ns + r.clock_offset_ns AS req_i_ns, l.req_d_ns + r.clock_offset_ns AS req_d_ns,"
        " l.req_c_ns + r.clock_offset_ns AS req_c_ns), s.clock_offset_ns AS _off, w.wait_kind, w.wait_rule"
        " FROM chain_links l JOIN sources s ON s.id = l.source_id LEFT JOIN sources r ON r.id = l.req_source_id"
        " LEFT JOIN wait_rows w ON w.source_id = l.source_id AND w.line = l.wait_line"
        " WHERE l.analysis_id = ? AND (? IS NULL OR l.chain_id <= ?) ORDER BY l.chain_id, l.pos",
        [analysis_id, last, last],
        shape="dicts",
        max_rows=1 << 22,
    )
    by_chain: dict[int, list] = defaultdict(list)
    for link in links:
        cid = link.pop("chain_id")
        link.pop("pos")
        req = {k[4:]: link.pop(k) for k in list(link) if k.startswith("req_")}
        link["request"] = req if req["line"] is not None else None
        off = link.pop("_off")
        also = json.loads(link["also_waiting"]) if isinstance(link["also_waiting"], str) else []
        link["also_waiting"] = [{**a, "start_ns": a["start_ns"] + off, "end_ns": a["end_ns"] + off} for a in also]
        link["lock_key"] = locks.label_key(link["lock"])
        link["wait_why"] = wait_kinds.why(link["wait_rule"])
        by_chain[cid].append(link)
    ids, starts, ends, texts = [], [], [], []
    for cid, dur in heads:
        first = by_chain[cid][0]
        ids.append(cid)
        starts.append(first["start_ns"])
        ends.append(first["end_ns"])
        texts.append(json.dumps({"id": cid, "duration_ns": dur, "links": by_chain[cid]}).encode())
    return BuiltChains(ids, starts, ends, texts)


# ---- waits ---------------------------------------------------------------------------------------------------------

WAIT_COLUMNS = [
    "source_id",
    "line",
    "kind",
    "pid",
    "comm",
    "cpu",
    "start_ns",
    "end_ns",
    "duration_ns",
    "end_known",
    "end_line",
    "state",
    "lock",
    "primitive",
    "stack",
    "inferred",
    "evidence",
    "waker_pid",
    "waker_comm",
    "waker_stack",
    "wake_line",
    "wake_ns",
    "holder_pid",
    "holder_comm",
    "holder_line",
    "holder_ns",
    "holder_evidence",
    "wait_kind",
    "wait_rule",
]  # a wait's fields, as the lists answer them (with wait_why)
WAIT_TIMES = frozenset({"start_ns", "end_ns", "wake_ns", "holder_ns"})  # moved by the source's clock offset
WAIT_TEXTS = 10_000  # an analysis with at most this many waits keeps each wait's JSON text too (~1-2 KB each)


class RankedWaits:
    """An analysis' waits (or its stall waits only) in each order of the lists: ids (source, line), aligned start
    and end, in `stalls._WAIT_ORDER`'s order (duration: longest first; start: earliest first; ties by source and
    line); and, when there are at most WAIT_TEXTS of them, each one's JSON text as the lists answer it."""

    def __init__(self, cols: dict[str, np.ndarray], texts: dict[tuple[int, int], bytes] | None):
        sid, line, start, end, dur = (np.asarray(cols[c], np.int64) for c in ("sid", "line", "start", "end", "dur"))
        self.by = {"duration": np.lexsort((line, sid, -dur)), "start": np.lexsort((line, sid, start))}
        self.sid, self.line, self.start, self.end = sid, line, start, end
        self.texts = texts
        self.nbytes = 7 * 8 * len(sid) + (sum(len(t) + 100 for t in texts.values()) if texts else 0)

    def select(self, order: str, limit: int, t0=None, t1=None, starting: bool = False) -> list[tuple[int, int]]:
        """The (source, line) of the first `limit` waits in `order` overlapping [t0, t1] (None: open), or with
        `starting` starting in it."""
        rank = self.by[order]
        keep = np.ones(len(rank), bool)
        if t0 is not None:
            keep &= (self.start[rank] if starting else self.end[rank]) >= t0
        if t1 is not None:
            keep &= self.start[rank] <= t1
        picked = rank[np.flatnonzero(keep)[:limit]]
        return list(zip(self.sid[picked].tolist(), self.line[picked].tolist()))


def wait_columns(offset: str) -> str:
    """The select list of a wait's fields (WAIT_COLUMNS) of `waits w`, its times moved by `offset` (an expression)."""
    return aligned_by(WAIT_COLUMNS, offset, "w", WAIT_TIMES)


def ranked_waits(con, cache: AnalysisCache, analysis_id: str, idle: bool) -> RankedWaits:
    clock = offsets(con, cache, analysis_id)
    return cache.shared(
        (analysis_id, "waits-ranked", idle, clock),
        lambda: _rank_waits(con, analysis_id, idle, clock),
        lambda ranked: ranked.nbytes,
    )


def window_wait_texts(
    con, cache: AnalysisCache, analysis_id: str, order: str, limit: int, t0, t1, idle: bool, starting: bool
) -> list[bytes]:
    """The JSON texts of the first `limit` waits in `order` in the window (RankedWaits.select), each as the lists
    answer it: kept, or read by their ids."""
    ranked = ranked_waits(con, cache, analysis_id, idle)
    ids = ranked.select(order, limit, t0, t1, starting)
    if ranked.texts is not None:
        return [ranked.texts[k] for k in ids]
    by_source: dict[int, list[int]] = defaultdict(list)
    for sid, line in ids:
        by_source[sid].append(line)
    found = {}
    offs = dict(offsets(con, cache, analysis_id))
    for sid, lines in by_source.items():
        found.update(_wait_texts(con, sid, offs[sid], " AND list_contains($lines, w.line)", {"lines": lines}))
    return [found[k] for k in ids]


def _wait_texts(con, sid: int, offset: int, where: str, params: dict) -> dict[tuple[int, int], bytes]:
    """(source, line) -> the wait's JSON text (its fields with the times moved by the source's `offset`, and the
    rule's sentence) of the waits of source `sid` that `where` (" AND ...", on `waits w`) keeps. One source at a
    time, its offset a parameter: a join with `sources` here cost 2-4x the read."""
    out = {}
    for w in run(
        con,
        f"SELECT {wait_columns('$off')} FROM waits w WHERE w.source_id = $sid{where}",
        {**params, "sid": sid, "off": offset},
        shape="dicts",
        max_rows=1 << 30,
    ):
        w["wait_why"] = wait_kinds.why(w["wait_rule"])
        out[(w["source_id"], w["line"])] = json.dumps(w).encode()
    return out


def _rank_waits(con, analysis_id: str, idle: bool, clock: tuple[tuple[int, int], ...]) -> RankedWaits:
    stalls_only = "" if idle else " AND w.wait_kind IS DISTINCT FROM 'idle'"  # as the view stall_waits
    cols = run(
        con,
        "SELECT w.source_id AS sid, w.line, w.start_ns + s.clock_offset_ns AS start,"
        " w.end_ns + s.clock_offset_ns AS end, w.duration_ns AS dur FROM wait_rows w"
        f" JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = $aid{stalls_only}",
        {"aid": analysis_id},
        shape="numpy",
        max_rows=1 << 40,
    )
    texts = None
    if len(cols["sid"]) <= WAIT_TEXTS:
        texts = {}
        for sid, offset in clock:
            texts.update(_wait_texts(con, sid, offset, stalls_only, {}))
    return RankedWaits(cols, texts)
