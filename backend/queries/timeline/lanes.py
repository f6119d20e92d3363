"""Which lanes a timeline response holds, most telling first (chains' tasks, devices, windows, CPUs, then tasks and
processes ranked from a coarse level), the chains' arrows across them and the print markers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.compute as pc

from ...distinct import distinct
from .. import devices
from ..run import run
from .columns import take

if TYPE_CHECKING:
    from ...cache import AnalysisCache

MAX_MARKS = 500
MAX_CHAINS = 50
CHAIN_COLS = (
    "chain_id",
    "pos",
    "source_id",
    "pid",
    "comm",
    "relation",
    "start_ns",
    "end_ns",
    "req_source_id",
    "req_dev",
    "req_line",
    "req_c_ns",
)


def chain_links(con, cache: AnalysisCache, analysis_id: str, sources: list[dict], p: dict) -> list[dict]:
    """Links of the top chains whose first wait overlaps the window, times aligned. The analysis' links (as tuples of
    CHAIN_COLS, times aligned, by chain and position: ~11 MB for 28 k links) and their first link's aligned span are
    kept per clock offsets (the AnalysisCache): a window's are picked without a query or a conversion."""
    offsets = {s["id"]: s["clock_offset_ns"] for s in sources}

    def build():
        table = run(
            con,
            f"SELECT {', '.join(CHAIN_COLS)} FROM chain_links WHERE analysis_id = $aid ORDER BY chain_id, pos",
            {"aid": analysis_id},
            shape="arrow",
        )
        first = table.filter(
            pc.and_(pc.equal(table["pos"], 0), pc.and_(pc.is_valid(table["start_ns"]), pc.is_valid(table["end_ns"])))
        )
        off = np.array([offsets[x] for x in first["source_id"].to_pylist()], np.int64)
        return {
            "links": [_aligned(link, offsets) for link in zip(*(table[c].to_pylist() for c in CHAIN_COLS))],
            "chain_id": table["chain_id"].to_numpy(),
            "ids": first["chain_id"].to_numpy(),
            "t0": first["start_ns"].to_numpy() + off,
            "t1": first["end_ns"].to_numpy() + off,
        }

    chains = cache.shared(
        (analysis_id, "timeline-chains", tuple(offsets.items())),
        build,
        lambda d: LINK_BYTES * len(d["links"]) + 32 * len(d["ids"]),
    )
    ids = chains["ids"][(chains["t1"] >= p["t0"]) & (chains["t0"] <= p["t1"])][:MAX_CHAINS]
    a, z = np.searchsorted(chains["chain_id"], ids, "left"), np.searchsorted(chains["chain_id"], ids, "right")
    links = chains["links"]
    return [dict(zip(CHAIN_COLS, links[i])) for x, y in zip(a.tolist(), z.tolist()) for i in range(x, y)]


LINK_BYTES = 400  # a kept link: its tuple (12 fields) and the int and str objects it holds (measured: 375-395)


def _aligned(link: tuple, offsets: dict[int, int]) -> tuple:
    """A link's row with its times on the analysis timeline (its source's clock offset added; the request's
    completion by the request's source's)."""
    row = dict(zip(CHAIN_COLS, link))
    off, req_off = offsets[row["source_id"]], offsets.get(row["req_source_id"])
    row["start_ns"] = None if row["start_ns"] is None else row["start_ns"] + off
    row["end_ns"] = None if row["end_ns"] is None else row["end_ns"] + off
    row["req_c_ns"] = None if row["req_c_ns"] is None or req_off is None else row["req_c_ns"] + req_off
    return tuple(row.values())


_LANE_PREFIX = {"task": "task:", "device": "dev:", "process": "proc:", "cpu": "cpu:"}


def lane_id(kind: str, sid: int, key) -> str:
    return f"{_LANE_PREFIX[kind]}{sid}:{key}"


def lane_key(kind: str, pid, dev):
    """What names a lane of its kind within its source: a device's or a CPU's dev, else the pid."""
    return dev if kind in ("device", "cpu") else pid


def _segment_scores(segs: dict, q: dict) -> dict:
    """Segments (lane, track, state, s, e columns) as rows of a lane's scores: each one record, its time in the
    window [q["lo"], q["hi"]] and its whole length."""
    return {
        "lane": segs["lane"],
        "track": segs["track"],
        "state": segs["state"],
        "tot": np.minimum(segs["e"], q["hi"]) - np.maximum(segs["s"], q["lo"]),
        "n": np.ones(len(segs["s"]), np.int64),
        "mx": segs["e"] - segs["s"],
    }


def _lane_scores(rd: dict, s: dict, names: dict[str, int]) -> dict[str, np.ndarray]:
    """What each lane of the source holds in the window, from a level of at most RANK_BUCKETS buckets over it plus the
    segments at least one of its buckets long (clipped to the window): arrays over the lanes that hold anything
    ("lane", ascending), of their time blocked, running and busy (a CPU lane's track 0: the tasks that ran there),
    their calls, queued and serviced requests, and their slowest I→D or D→C phase (-1: none)."""
    q, kr, w0 = rd["q"], rd["kr"], s["w0_ns"]
    long = take(rd["long"], rd["long"]["lvl"] > kr)
    parts = [rd["rank"], _segment_scores(long, q)]
    if kr == 0:  # the segments between a level-0 and a level-1 bucket long
        parts.append(_segment_scores(take(rd["raw"], rd["raw"]["e"] - rd["raw"]["s"] >= w0), q))
    lane, track, state, tot, n, mx = (
        np.concatenate([x[c] for x in parts]) for c in ("lane", "track", "state", "tot", "n", "mx")
    )
    running = names.get("running", -1)
    lanes = distinct(lane)
    size = int(lanes[-1]) + 1 if len(lanes) else 0
    blk = (track == 3) | (track == 4)
    worst = np.full(size, -1, np.int64)
    np.maximum.at(worst, lane[blk], mx[blk])
    return {
        "lane": lanes,
        "blocked": _summed(lane, track == 1, tot, size)[lanes],
        "running": _summed(lane, (track == 0) & (state == running), tot, size)[lanes],
        "busy": _summed(lane, track == 0, tot, size)[lanes],
        "calls": _summed(lane, track == 2, n, size)[lanes],
        "queued": _summed(lane, track == 3, n, size)[lanes],
        "requests": _summed(lane, track == 4, n, size)[lanes],
        "worst": worst[lanes],
    }


def _summed(lane: np.ndarray, mask: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """values summed per lane where mask holds (int64, exact: not through floats)."""
    out = np.zeros(size, np.int64)
    np.add.at(out, lane[mask], values[mask])
    return out


def lane_registry(con, cache: AnalysisCache, analysis_id: str) -> dict[int, dict[int, tuple]]:
    """Per source, its lanes: lane -> (kind, pid, dev, comm); kept per analysis (the AnalysisCache: rows that never change)."""

    def build():
        reg: dict[int, dict[int, tuple]] = defaultdict(dict)
        for sid, lane, kind, pid, dev, comm in run(
            con,
            "SELECT l.source_id, l.lane, l.kind, l.pid, l.dev, l.comm FROM tl_lanes l"
            " JOIN sources s ON s.id = l.source_id WHERE s.analysis_id = ?",
            [analysis_id],
        ):
            reg[sid][lane] = (kind, pid, dev, comm)
        return dict(reg)

    return cache.shared((analysis_id, "timeline-lanes"), build, lambda reg: 200 * sum(len(x) for x in reg.values()))


KIND_CODES = {"task": 0, "process": 1, "device": 2, "cpu": 3}
NO_PID = np.iinfo(np.int64).min
INDEXED_LANE_BYTES = 170  # a lane in lane_index: its key tuple and dict slot (~150 bytes), its arrays' 9


def lane_index(cache: AnalysisCache, analysis_id: str, registry: dict[int, dict[int, tuple]]) -> dict:
    """The registry (lane_registry's) the other way and as arrays, kept per analysis beside it: "lane", (source,
    kind, pid or dev) -> lane; per source, "kind" (KIND_CODES) and "pid" (NO_PID: none) indexed by lane. A window's
    lanes are ranked on these arrays: a perf capture of 23 k tasks has 23 k lanes, a view shows 40."""

    def build():
        by_key, arrays = {}, {}
        for sid, reg in registry.items():
            size = max(reg) + 1 if reg else 0
            kinds, pids = np.full(size, -1, np.int8), np.full(size, NO_PID, np.int64)
            for lane, (kind, pid, dev, _) in reg.items():
                by_key[(sid, kind, lane_key(kind, pid, dev))] = lane
                kinds[lane] = KIND_CODES[kind]
                if pid is not None:
                    pids[lane] = pid
            arrays[sid] = {"kind": kinds, "pid": pids}
        return {"lane": by_key, "arrays": arrays}

    return cache.shared((analysis_id, "timeline-lane-index"), build, lambda d: INDEXED_LANE_BYTES * len(d["lane"]))


CLONE_THREAD = 0x10000  # a task_newtask's clone_flags: the new task is a thread of its creator's process


def task_tgids(con, cache: AnalysisCache, analysis_id: str) -> dict[tuple[int, int], int]:
    """(source, pid) -> the task's thread group (its process' pid); kept per analysis (the AnalysisCache). Where the capture
    recorded it (the ftrace record-tgid option: task_tgids), as recorded; else inferred from the process events the
    trace holds: `sched_process_exec` makes its task a process of its own (an exec'd task leads its group), and
    `task_newtask` (emitted by the creator) puts the new task in its creator's group when its clone_flags have
    CLONE_THREAD, else in a group of its own; a creator of threads whose own group is not known leads it. Tasks the
    trace says nothing about have none (the frontend groups them as threads of an unknown process)."""

    def build():
        recorded = {
            (sid, pid): tgid
            for sid, pid, tgid in run(
                con,
                "SELECT t.source_id, t.pid, t.tgid FROM task_tgids t JOIN sources s ON s.id = t.source_id"
                " WHERE s.analysis_id = ?",
                [analysis_id],
            )
        }
        return {**infer_tgids(_process_events(con, analysis_id)), **recorded}

    return cache.shared((analysis_id, "timeline-tgids"), build, lambda d: 100 * len(d))


def _process_events(con, analysis_id: str) -> list[tuple]:
    """(source, pid, event, text) of the events that say which process a task belongs to, in trace order. (One
    event a branch: a scan filtered by an event absent from a row group skips it, text included; filtered by both,
    the text of every row group was read: 0.03 CPU-s for 0.5 M events, most of them kernel stacks.)"""
    branch = (
        "SELECT e.source_id, e.pid, e.event, e.text, e.line FROM trace_events e JOIN sources s ON s.id = e.source_id"
        " WHERE s.analysis_id = $aid AND e.event = "
    )
    return run(
        con,
        f"SELECT source_id, pid, event, text FROM ({branch}'task_newtask' UNION ALL {branch}'sched_process_exec')"
        " ORDER BY source_id, line",
        {"aid": analysis_id},
    )


def _fields(text: str | None) -> dict[str, str]:
    """An event's `key=value` fields (values without spaces: the ones read here are numbers)."""
    out = {}
    for tok in (text or "").split():
        k, eq, v = tok.partition("=")
        if eq:
            out[k] = v
    return out


def _int(v: str | None, base: int = 10) -> int | None:
    try:
        return int(v, base) if v is not None else None
    except ValueError:
        return None


def infer_tgids(events: list[tuple]) -> dict[tuple[int, int], int]:
    """Thread groups from (source, pid, event, text) process events in trace order (see task_tgids)."""
    tgid: dict[tuple[int, int], int] = {}
    for sid, pid, event, text in events:
        f = _fields(text)
        if event == "sched_process_exec":
            p = _int(f.get("pid")) if f.get("pid") is not None else pid
            if p is not None:
                tgid[(sid, p)] = p
        elif event == "task_newtask" and pid is not None:
            child, flags = _int(f.get("pid")), _int(f.get("clone_flags"), 16)
            if child is None or flags is None:
                continue
            if flags & CLONE_THREAD:
                tgid[(sid, child)] = tgid.setdefault((sid, pid), pid)
            else:
                tgid[(sid, child)] = child
    return tgid


class Candidates:
    """The lanes of a window in their rank order, each (id, kind, what makes its dict): a dict (an offcputime
    window), or (sid, kind, pid, dev, label, group, why) with `why` a text or (a format, its value); made into dicts
    only for the lanes a response holds (lane()). The tasks and processes ranked by a score come last, kept as
    sorted arrays (rank()) and made into entries only as far as they are read: a perf capture of 23 k tasks ranks
    23 k lanes for a view's 40 (its timeline took 0.2 s a window, most of it making every lane's entry)."""

    def __init__(self, task_lane: dict, tgids: dict[tuple[int, int], int]):
        self.entries: list[tuple[str, str, dict | tuple]] = []  # added one by one (add): before the ranked ones
        self._seen: set[str] = set()
        self._ranked: list[tuple[Callable, np.ndarray, np.ndarray, np.ndarray]] = []
        self._task_lane, self._tgids = task_lane, tgids

    @property
    def added(self) -> int:
        """How many entries come before the ranked ones."""
        return len(self.entries)

    def __len__(self) -> int:
        """Every distinct lane: those added, and the ranked ones not among them."""
        ranked: dict[int, list[np.ndarray]] = defaultdict(list)
        for _, sids, lanes, _ in self._ranked:
            for sid in distinct(sids).tolist():
                ranked[sid].append(lanes[sids == sid])
        n = len(self.entries)
        for sid, parts in ranked.items():
            lanes = distinct(np.concatenate(parts))
            n += len(lanes)
            for lid, kind, lane in self.entries:  # (a chain's task may be ranked too)
                if type(lane) is tuple and lane[0] == sid and kind in ("task", "process"):
                    at = self._task_lane.get((sid, kind, lane[2]))
                    if at is not None and at in lanes:
                        n -= 1
        return n

    def __iter__(self):
        yield from self.entries
        seen = set(self._seen)
        for make, sids, lanes, scores in self._ranked:
            for sid, lane, score in zip(sids.tolist(), lanes.tolist(), scores.tolist()):
                made = make(sid, lane, score)
                lid = lane_id(made[1], sid, lane_key(made[1], made[2], made[3]))
                if lid not in seen:
                    seen.add(lid)
                    yield lid, made[1], made

    def add(self, lane: dict | tuple) -> None:
        """A lane, unless one of its id is in already: a dict, or (sid, kind, pid, dev, label, group, why)."""
        if type(lane) is dict:
            lid, kind = lane["id"], lane["kind"]
        else:
            kind = lane[1]
            lid = lane_id(kind, lane[0], lane_key(kind, lane[2], lane[3]))
        if lid not in self._seen:
            self._seen.add(lid)
            self.entries.append((lid, kind, lane))

    def rank(self, make: Callable[[int, int, int], tuple], sids: np.ndarray, lanes: np.ndarray, scores: np.ndarray):
        """Lanes (source, lane) after every one before, in this order (already sorted), each made into its tuple by
        make(source, lane, score) when it is read; a lane already in is skipped."""
        self._ranked.append((make, sids, lanes, scores))

    def lane(self, entry: tuple[str, str, dict | tuple]) -> dict:
        """An entry's lane as the response holds it (a new dict)."""
        lid, kind, lane = entry
        if type(lane) is dict:
            return dict(lane)
        sid, kind, pid, dev, label, group, why = lane
        return {
            "id": lid,
            "kind": kind,
            "source_id": sid,
            "label": label,
            "group": group,
            "pid": pid,
            "dev": dev,
            "why": why if type(why) is str else why[0].format(why[1]),
            "tgid": self._tgids.get((sid, pid)) if kind == "task" else None,
            "_lane": self._task_lane.get((sid, kind, lane_key(kind, pid, dev))),
        }


TASK_RANKS = (  # the tasks' scores, ranked in this order, and what each says
    ("blocked", "blocked ≈{} ns in the window"),
    ("running", "running ≈{} ns in the window"),
    ("calls", "≈{} top-level calls in the window"),
)


def candidate_lanes(
    p: dict,
    sources: list[dict],
    chains: list[dict],
    registry: dict,
    reads: dict,
    names: dict[str, int],
    tgids: dict[tuple[int, int], int],
    index: dict,
) -> Candidates:
    """Every lane with something in the window, most telling first: the tasks of the chains (by chain rank), the
    block devices, the offcputime windows, then tasks by time blocked, by time running, by calls, and processes
    by their slowest phase (`index`: lane_index's, of the whole registry)."""
    registry = {sid: reg for sid, reg in registry.items() if sid in reads}
    scores = {s["id"]: _lane_scores(reads[s["id"]], s, names) for s in sources if s["id"] in reads}
    lanes = Candidates(index["lane"], tgids)
    add = lanes.add

    for link in chains:
        if link["pid"] is not None:
            add(
                (
                    link["source_id"],
                    "task",
                    link["pid"],
                    None,
                    f"{link['comm'] or '?'} ({link['pid']})",
                    None,
                    f"chain #{link['chain_id']}",
                )
            )
    ranked = {name: [] for name in ("device", "cpu")}
    by_score = {name: [] for name, _ in TASK_RANKS + (("process", ""),)}  # per source: (sid, lanes, scores, pids)
    named = {  # per source, the devices its capture names ("8,0 (sda)")
        sid: devices.names(
            next((s["filename"] for s in sources if s["id"] == sid), ""),
            [dev for kind, _, dev, _ in reg.values() if kind == "device"],
        )
        for sid, reg in registry.items()
    }
    for s in sources:
        if s["format"] == "offcputime":
            start = s["t_min_ns"] + s["clock_offset_ns"]
            end = s["t_max_ns"] + s["clock_offset_ns"] if s["t_max_ns"] is not None else None
            ranked.setdefault("window", []).append(
                (
                    (),
                    {
                        "id": f"window:{s['id']}",
                        "kind": "window",
                        "source_id": s["id"],
                        "label": "capture window",
                        "group": s["filename"],
                        "pid": None,
                        "dev": None,
                        "why": "offcputime dump",
                        "tgid": None,
                        "band": {"t0_ns": start, "t1_ns": end},
                    },
                )
            )
        if s["id"] not in scores:
            continue
        sid, sc, reg = s["id"], scores[s["id"]], registry[s["id"]]
        arrays = index["arrays"][sid]
        kinds, pids = arrays["kind"][sc["lane"]], arrays["pid"][sc["lane"]]
        for i in np.flatnonzero(kinds == KIND_CODES["device"]).tolist():
            dev = reg[int(sc["lane"][i])][2]
            n = int(sc["requests"][i]) or int(sc["queued"][i])  # requests serviced, else those queued
            ranked["device"].append(
                (
                    (-n, sid, dev),
                    (
                        sid,
                        "device",
                        None,
                        dev,
                        devices.label(dev, named.get(sid, {})),
                        s["filename"],
                        f"≈{n} requests in the window",
                    ),
                )
            )
        for i in np.flatnonzero(kinds == KIND_CODES["cpu"]).tolist():
            dev = reg[int(sc["lane"][i])][2]
            ranked["cpu"].append(
                (
                    (sid, int(dev)),
                    (sid, "cpu", None, dev, f"CPU {dev}", "CPUs", f"tasks ran ≈{int(sc['busy'][i])} ns in the window"),
                )
            )
        tasks = kinds == KIND_CODES["task"]
        for key, _ in TASK_RANKS:
            m = tasks & (sc[key] > 0)
            by_score[key].append((sid, sc["lane"][m], sc[key][m], pids[m]))
        m = kinds == KIND_CODES["process"]
        by_score["process"].append((sid, sc["lane"][m], sc["worst"][m], pids[m]))  # (-1: no phase, ranked as 0)
    for key in ("device", "window", "cpu"):
        for _, lane in sorted(ranked.get(key, []), key=lambda x: x[0]):
            add(lane)

    def task(why: str):
        def make(sid: int, lane: int, score: int) -> tuple:
            _, pid, _, comm = registry[sid][lane]
            label = comm if pid is not None and pid < 0 else f"{comm or '?'} ({pid})"  # "CPU n (task unknown)"
            return (sid, "task", pid, None, label, None, (why, score))

        return make

    filenames = {s["id"]: s["filename"] for s in sources}

    def process(sid: int, lane: int, worst: int) -> tuple:
        _, pid, _, comm = registry[sid][lane]
        why = f"slowest I→D or D→C phase ≈{worst} ns" if worst >= 0 else "requests in the window"
        return (sid, "process", pid, None, f"{comm} ({pid})", filenames[sid], why)

    for key, make in [*((key, task(why)) for key, why in TASK_RANKS), ("process", process)]:
        parts = by_score[key]
        if not parts:
            continue
        sids = np.concatenate([np.full(len(x[1]), x[0], np.int64) for x in parts])
        lane_no, score, pid = (np.concatenate([x[k] for x in parts]) for k in (1, 2, 3))
        order = np.lexsort((pid, sids, -np.maximum(score, 0)))  # (-score, source, pid), as lanes were always ranked
        lanes.rank(make, sids[order], lane_no[order], score[order])
    return lanes


def arrows(chains: list[dict], lane_ids: set) -> list[dict]:
    by_chain: dict[int, list[dict]] = defaultdict(list)
    for link in chains:
        by_chain[link["chain_id"]].append(link)
    arrows = []
    for cid, links in by_chain.items():
        for waiter, nxt in zip(links, links[1:] + [None]):
            to = f"task:{waiter['source_id']}:{waiter['pid']}"
            if waiter["relation"] == "io_completion" and waiter["req_line"] is not None:
                frm = f"dev:{waiter['req_source_id']}:{waiter['req_dev']}"
                arrows.append(
                    {
                        "chain_id": cid,
                        "relation": "io_completion",
                        "from_lane": frm,
                        "to_lane": to,
                        "from_ns": waiter["req_c_ns"],
                        "to_ns": waiter["end_ns"],
                        "request": {"source_id": waiter["req_source_id"], "line": waiter["req_line"]},
                    }
                )
            if nxt is None or waiter["relation"] is None or nxt["pid"] is None:
                continue
            frm = f"task:{nxt['source_id']}:{nxt['pid']}"
            arrows.append(
                {
                    "chain_id": cid,
                    "relation": waiter["relation"],
                    "from_lane": frm,
                    "to_lane": to,
                    "from_ns": waiter["end_ns"],
                    "to_ns": waiter["end_ns"],
                    "request": None,
                }
            )
    return [a for a in arrows if a["from_lane"] in lane_ids and a["to_lane"] in lane_ids]


KEPT_MARKS = 20_000  # a source with at most this many markers keeps them whole (else their times only)


class _Markers:
    """A source's print markers in its own time: their times, and when few (KEPT_MARKS) the rows too."""

    def __init__(self, times: np.ndarray, rows: list[tuple] | None):
        self.times, self.rows = times, rows
        self.nbytes = times.nbytes + (sum(200 + len(r[5] or "") for r in rows) if rows else 0)


def _markers(con, source_id: int) -> _Markers:
    times = np.asarray(
        run(
            con,
            "SELECT t_ns FROM trace_events WHERE source_id = ? AND event = 'print' AND t_ns IS NOT NULL ORDER BY t_ns",
            [source_id],
            shape="numpy",
        )["t_ns"],
        np.int64,
    )
    rows = None
    if len(times) <= KEPT_MARKS:
        rows = run(
            con,
            "SELECT source_id, line, t_ns, pid, comm, text FROM trace_events WHERE source_id = ? AND event = 'print'"
            " AND t_ns IS NOT NULL ORDER BY t_ns, line",
            [source_id],
            max_rows=KEPT_MARKS,
        )
    return _Markers(times, rows)


def marks(con, cache: AnalysisCache, analysis_id: str, sources: list[dict], p: dict) -> list[dict]:
    """The first MAX_MARKS print markers in the window, from each ftrace source in its own time: each source's
    markers are kept per analysis (the AnalysisCache), whole when few, else their times (so that the query reads
    a range holding those only)."""
    rows = []
    for s in sources:
        if s["format"] != "ftrace":
            continue
        kept = cache.shared(
            (analysis_id, "timeline-marks", s["id"]), lambda: _markers(con, s["id"]), lambda m: m.nbytes
        )
        off, times = s["clock_offset_ns"], kept.times
        a, z = int(np.searchsorted(times, p["t0"] - off, "left")), int(np.searchsorted(times, p["t1"] - off, "right"))
        if z <= a:
            continue
        if kept.rows is not None:
            rows += [(sid, line, t + off, *rest) for sid, line, t, *rest in kept.rows[a : min(z, a + MAX_MARKS)]]
        else:
            rows += run(
                con,
                "SELECT source_id, line, t_ns + ? AS t_ns, pid, comm, text FROM trace_events WHERE source_id = ?"
                " AND t_ns BETWEEN ? AND ? AND event = 'print' ORDER BY t_ns, line LIMIT ?",
                [off, s["id"], int(times[a]), int(times[min(z, a + MAX_MARKS) - 1]), MAX_MARKS],
            )
    rows.sort(key=lambda r: (r[2], r[1]))
    return [dict(zip(("source_id", "line", "t_ns", "pid", "comm", "text"), r)) for r in rows[:MAX_MARKS]]
