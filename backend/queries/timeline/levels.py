"""What one source's lanes are drawn from in a window: the summaries' level whose bucket is at least a pixel (kept
in memory per analysis above level 0), the long segments, the raw rows of a narrow window, calls and requests in
flight. Columns are numpy arrays; text as codes into the response's names."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...distinct import distinct
from ...schema.tables import BLK_PHASES, FAN, MAX_CALL_DEPTH
from ..run import run
from .columns import empty_columns, group, longest_per_group, runs, sort_order, take
from .lanes import lane_key

if TYPE_CHECKING:
    from ...cache import AnalysisCache

MAX_CALLS = 2000  # calls per lane (the longest), before coarsening
RANK_BUCKETS = 512  # lanes are ranked from the finest level with at most this many buckets in the window


def own_window(s: dict, p: dict) -> dict:
    """The window in the source's own clock; $slo: how early a segment shorter than a level-1 bucket may start."""
    lo = p["t0"] - s["clock_offset_ns"]
    return {"sid": s["id"], "lo": lo, "hi": p["t1"] - s["clock_offset_ns"], "slo": lo - s["w0_ns"] * FAN}


def _level(s: dict, width: int, most: int) -> int:
    """The finest level of the source with at most `most` buckets over `width` ns (its top level at most)."""
    k = 0
    while k < s["top_level"] and width // (s["w0_ns"] * FAN**k) > most:
        k += 1
    return k


def _fetch(
    con, sql: str, params: dict, names: dict[str, int], wide: bool = True, nullable: tuple = ()
) -> dict[str, np.ndarray]:
    """The rows of sql as numpy columns (through Arrow), integers as int64 (`wide`) or as they come; text columns as
    codes into `names` (name -> code, grown with the names met; int64, or int32 when not `wide`). The `nullable`
    columns have their nulls as 0, and which are not null as valid_<name>."""
    used = set(re.findall(r"\$(\w+)", sql))
    table = run(con, sql, {k: v for k, v in params.items() if k in used}, shape="arrow")
    cols = {}
    for name, col in zip(table.column_names, table.columns):
        col = col.combine_chunks()
        if name in nullable:
            cols[f"valid_{name}"] = col.is_valid().to_numpy(zero_copy_only=False)
            col = col.fill_null(0)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            enc = pc.dictionary_encode(col)
            codes = np.array(
                [names.setdefault(x, len(names)) for x in enc.dictionary.to_pylist()], np.int64 if wide else np.int32
            )
            cols[name] = codes[enc.indices.to_numpy(zero_copy_only=False)] if len(codes) else codes
        else:
            arr = col.to_numpy(zero_copy_only=False)
            cols[name] = arr.astype(np.int64) if wide and arr.dtype.kind in "iu" else arr
    return cols


def read_source(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    s: dict,
    p: dict,
    lanes: dict[int, tuple],
    names: dict[str, int],
    levels_only: bool = False,
) -> dict:
    """What one source's lanes are ranked from and drawn with in the window, read once (own clock): the levels of
    the ranking (`kr`, at most RANK_BUCKETS buckets over the window) and of the drawing (`k`, the finest whose bucket
    is at least a pixel; -1: narrower than a level-0 bucket per pixel, the raw tables), the segments of tl_long
    either needs (`long`: lane, track, state, s, e, line, lvl), the ranking level's bins of every lane (`rank`), and
    when either level is below 1 the window's raw segments shorter than a level-1 bucket (`raw`). Nothing is read
    when the window is outside the source's span (`none`). With `levels_only`, the summaries of those two levels
    only, not kept (_summary)."""
    q = own_window(s, p)
    w0, b = s["w0_ns"], p["b"]
    kr = _level(s, p["t1"] - p["t0"], RANK_BUCKETS)
    k = -1
    if b >= w0:  # the finest level whose bucket is at least a pixel (1 to FAN pixels; wider than the top: pixels)
        k = 0
        while k < s["top_level"] and w0 * FAN**k < b:
            k += 1
    none = q["hi"] < s["t_min_ns"] or q["lo"] > s["t_max_ns"]
    rd = {
        "q": q,
        "k": k,
        "kr": kr,
        "none": none,
        "long": empty_columns(LONG_COLS),
        "rank": empty_columns(RANK_COLS),
        "raw": empty_columns(SEG_COLS),
        "events": empty_columns(("lane", "t", "d")),
    }
    if none:
        return rd
    if levels_only:  # (the levels of tl_bins this read draws from: _summary)
        s["_levels"] = {lvl for lvl in (k, kr) if lvl >= 1}
    rd["long"] = _long(con, cache, analysis_id, s, min(k, kr), q, names)
    rd["rank"] = _bins(con, cache, analysis_id, s, kr, q, names)
    if k < 1 or kr < 1:
        rd["raw"], rd["events"] = _raw(con, s, q, lanes, names, calls=kr < 1)
    return rd


def _summary(con, cache: AnalysisCache, analysis_id: str, s: dict) -> dict:
    """A source's summaries above level 0, kept per analysis from a window's first read (the AnalysisCache; ~45 bytes a row:
    ~45 MB, ~0.3 s, for the 17 M-event benchmark analysis) so that a window reads them without a query: per level,
    tl_bins' rows by lane, track, state and bucket (key ("tl_bins", level); their runs of one lane, track and
    state: ("tl_groups", level), _groups) and tl_long's by start (("tl_long", level)); states as codes into
    `states` (an array of the names). A window's bins come by runs, each by bucket: drawn without a sort. Level 0
    (as large as the others together, for narrow windows only) is read by a query.

    A read with `levels_only` (read_source: the whole analysis' view being stored) reads only the levels of tl_bins
    it draws from (s["_levels"]) unless the whole summaries are kept: the first view of a 12 M-line
    function_graph capture draws from 2 of its 5 levels (36 % of the rows); the warm-up builds the whole summaries
    for the zooms that follow, after the upload's response. Its states have the codes the whole summaries give them
    (the order of their first rows), so the view is the same, byte for byte."""
    key = (analysis_id, "timeline-summary", s["id"])
    levels = s.get("_levels")
    if levels is not None and not cache.kept(key):
        if s.get("_summary") is None or s["_summary"]["levels"] != levels:
            s["_summary"] = {**_read_summary(con, s, sorted(levels)), "levels": set(levels)}
        return s["_summary"]
    return cache.shared(
        key,
        lambda: _read_summary(con, s, None),
        lambda x: sum(v.nbytes for k, c in x.items() if k != "states" for v in c.values()) + 64 * len(x["states"]),
    )


def _read_summary(con, s: dict, levels: list[int] | None) -> dict:
    """_summary's summaries of the source: tl_bins at these levels (None: every level above 0), tl_long whole."""
    states: dict[str, int] = {}
    bins = "level > 0"
    if levels is not None:
        bins = f"level IN ({', '.join(str(int(lvl)) for lvl in levels)})" if levels else "FALSE"
        # the states' codes as the whole read gives them: by their first row in its order
        for (state,) in run(
            con,
            "SELECT state FROM tl_bins WHERE source_id = $sid AND level > 0 GROUP BY state"
            " ORDER BY min((level, lane, track)), state",
            {"sid": s["id"]},
        ):
            states[state] = len(states)
    out = {}
    for table, sql in (
        (
            "tl_bins",
            "SELECT level AS k, lane, track, state, bucket, tot, n, mx, line FROM tl_bins"
            f" WHERE source_id = $sid AND {bins} ORDER BY level, lane, track, state, bucket",
        ),
        (
            "tl_long",
            "SELECT lvl AS k, lane, track, state, s, e, line FROM tl_long WHERE source_id = $sid ORDER BY lvl, s",
        ),
    ):
        cols = _fetch(con, sql, {"sid": s["id"]}, states, wide=False)
        k = cols.pop("k")
        cut = np.searchsorted(k, np.arange(s["top_level"] + 3))
        out.update(
            {
                (table, lvl): {c: v[cut[lvl] : cut[lvl + 1]] for c, v in cols.items()}
                for lvl in range(s["top_level"] + 2)
                if table == "tl_long" or levels is None or lvl in levels
            }
        )
    for lvl in range(1, s["top_level"] + 2):
        if ("tl_bins", lvl) in out:
            out[("tl_groups", lvl)] = _groups(out[("tl_bins", lvl)])
    return {**out, "states": np.array(list(states) or [""], object)}


def _groups(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The groups of a kept level's rows (sorted by lane, track, state, bucket): each run of one lane, track and
    state; their lane and track; and per row `key` = group * span + bucket - first (span: the buckets' range + 2),
    ascending, so that a group's buckets in a window are found by one search (set in x)."""
    lane, track, state, bucket = x["lane"], x["track"], x["state"], x["bucket"]
    change = np.ones(len(lane), bool)
    change[1:] = (lane[1:] != lane[:-1]) | (track[1:] != track[:-1]) | (state[1:] != state[:-1])
    first = np.flatnonzero(change)
    low = int(bucket.min()) if len(bucket) else 0
    span = int(bucket.max()) - low + 2 if len(bucket) else 1
    x["key"] = (np.cumsum(change) - 1) * span + (bucket.astype(np.int64) - low)
    return {"first": first, "lane": lane[first], "track": track[first], "low_span": np.array([low, span], np.int64)}


def _coded(rows: dict[str, np.ndarray], states: np.ndarray, names: dict[str, int]) -> dict[str, np.ndarray]:
    """The rows (a slice of a kept level) as int64 columns, their states as codes into `names`."""
    rows = {c: v.astype(np.int64) for c, v in rows.items()}
    used = distinct(rows["state"])
    code = np.zeros(len(states), np.int64)  # kept code -> the response's
    code[used] = [names.setdefault(x, len(names)) for x in states[used].tolist()]
    rows["state"] = code[rows["state"]]
    return rows


def _bins(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    s: dict,
    level: int,
    q: dict,
    names: dict[str, int],
    drawn: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The rows of a tl_bins level whose bucket is in the window [lo, hi] (own clock): every lane, or above level 0
    with `drawn` (per source lane: whether it is drawn) those of the drawn lanes but their call track (drawn from
    the calls). Above level 0 they come by runs of one lane, track and state, each by bucket."""
    w = s["w0_ns"] * FAN**level
    if level == 0:
        return _fetch(
            con,
            "SELECT lane, track, state, bucket, tot, n, mx, line FROM tl_bins WHERE source_id = $sid"
            " AND level = 0 AND bucket BETWEEN $lo // $w AND $hi // $w",
            {**q, "w": w},
            names,
        )
    sm = _summary(con, cache, analysis_id, s)
    x, g = sm[("tl_bins", level)], sm[("tl_groups", level)]
    low, span = g["low_span"].tolist()
    pick = np.arange(len(g["first"]))
    if drawn is not None:
        lane = g["lane"]
        pick = pick[(lane < len(drawn)) & (g["track"] != 2)]
        pick = pick[drawn[lane[pick]]]
    base = pick * span
    a = np.searchsorted(x["key"], base + min(max(q["lo"] // w - low, 0), span - 1), "left")
    z = np.searchsorted(x["key"], base + min(max(q["hi"] // w - low, -1), span - 2) + 1, "left")
    n = z - a
    at = np.arange(int(n.sum())) + np.repeat(a - np.cumsum(n) + n, n)  # each group's rows in the window
    return _coded({c: v[at] for c, v in x.items() if c != "key"}, sm["states"], names)


def _long(
    con, cache: AnalysisCache, analysis_id: str, s: dict, k: int, q: dict, names: dict[str, int]
) -> dict[str, np.ndarray]:
    """The segments of tl_long above level k (at least a level-k bucket long) overlapping [lo, hi] (own clock), with
    their level: per level those starting at most one of its buckets before lo (shorter than it), the longest all."""
    top, sm = s["top_level"], _summary(con, cache, analysis_id, s)
    parts, lvls = [], []
    for lvl in range(max(k + 1, 0), top + 2):
        x = sm[("tl_long", lvl)]
        a = np.searchsorted(x["s"], q["lo"] - s["w0_ns"] * FAN**lvl, "left") if lvl <= top else 0
        z = np.searchsorted(x["s"], q["hi"], "right")
        keep = a + np.flatnonzero(x["e"][a:z] >= q["lo"])
        parts.append({c: v[keep] for c, v in x.items()})
        lvls.append(np.full(len(keep), lvl, np.int64))
    if not parts:
        return empty_columns(LONG_COLS)
    # the kept codes of every level coded at once (one states array per source)
    rows = _coded({c: np.concatenate([x[c] for x in parts]) for c in parts[0]}, sm["states"], names)
    rows["lvl"] = np.concatenate(lvls)
    return {c: rows[c] for c in LONG_COLS}


LONG_COLS = ("lane", "track", "state", "s", "e", "line", "lvl")
RANK_COLS = ("lane", "track", "state", "tot", "n", "mx")
SEG_COLS = ("lane", "track", "state", "s", "e", "line")


def _raw(con, s: dict, q: dict, lanes: dict[int, tuple], names: dict[str, int], calls: bool) -> tuple[dict, dict]:
    """The segments of _segs overlapping the window [$lo, $hi] and shorter than a level-1 bucket ($lo - $slo: the
    longer ones are in tl_long), from the raw tables by a range of one column each (row groups outside it are
    skipped); lanes looked up here, not joined. With `calls` (ranking at level 0), the depth-0 calls too, only those
    at least w0_ns long (from tl_calls): those shorter are in the level-0 bins. Of block requests, also the inserts
    (d = 1) and completions (-1) per device lane from the start of the window's level-0 bucket (`events`: lane, t,
    d), as tl_depth counts them: the requests in flight within a pixel."""
    events = empty_columns(("lane", "t", "d"))
    table = {(kind, lane_key(kind, pid, dev)): ln for ln, (kind, pid, dev, _) in lanes.items()}

    def lane_of(kind: str, keys: np.ndarray, values: list | None = None) -> np.ndarray:
        """The lane of each key (a pid; for a device, an index into `values`); -1: none."""
        u = distinct(keys)
        found = [table.get((kind, v if values is None else values[v]), -1) for v in u.tolist()]
        return np.array(found, np.int64)[np.searchsorted(u, keys)]

    if s["format"] == "ftrace":
        sql = """
            SELECT pid, 0 AS track, state, start_ns AS s, end_ns AS e, line FROM task_slices
            WHERE source_id = $sid AND pid IS NOT NULL AND start_ns BETWEEN $slo AND $hi AND end_ns >= $lo
              AND end_ns - start_ns < $lo - $slo
            UNION ALL
            SELECT pid, 1, coalesce(lock_key, lock, '?'), start_ns, end_ns, line FROM waits
            WHERE source_id = $sid AND pid IS NOT NULL AND start_ns BETWEEN $slo AND $hi AND end_ns >= $lo
              AND end_ns >= start_ns AND end_ns - start_ns < $lo - $slo"""
        if calls:
            sql += """
            UNION ALL
            SELECT pid, 2, 'call', entry_ns, end_ns, line FROM tl_calls
            WHERE source_id = $sid AND pid IS NOT NULL AND depth = 0 AND entry_ns BETWEEN $slo AND $hi
              AND end_ns >= $lo AND duration_ns < $lo - $slo"""
        rows = _fetch(con, sql, q, names)
        rows["lane"] = lane_of("task", rows.pop("pid"))
        rows = take(rows, rows["lane"] >= 0)
        if any(kind == "cpu" for kind, *_ in lanes.values()):  # what ran on each CPU (derive/cpus.py)
            cpu = _fetch(
                con,
                """
                SELECT cpu, 0 AS track, coalesce(comm, '?') AS state, start_ns AS s, end_ns AS e, line FROM cpu_slices
                WHERE source_id = $sid AND pid <> 0 AND start_ns BETWEEN $slo AND $hi AND end_ns >= $lo
                  AND end_ns >= start_ns AND end_ns - start_ns < $lo - $slo""",
                q,
                names,
            )
            u = distinct(cpu["cpu"])
            found = np.array([table.get(("cpu", str(c)), -1) for c in u.tolist()], np.int64)
            cpu["lane"] = found[np.searchsorted(u, cpu.pop("cpu"))] if len(u) else cpu.pop("cpu")
            cpu = take(cpu, cpu["lane"] >= 0)
            rows = {c: np.concatenate([rows[c], cpu[c]]) for c in SEG_COLS}
        return rows, events
    devs: dict[str, int] = {}
    cols = "coalesce(dev, '') AS dev, coalesce(pid, -1) AS pid, line, i_ns, d_ns, c_ns"
    r = _fetch(
        con,
        f"""
        SELECT {cols} FROM blk_requests WHERE source_id = $sid AND i_ns BETWEEN $slo AND $hi
        UNION ALL  -- those inserted before (or never) dispatched or completed in the window: a range of one
        -- column per branch (an OR of two ranges is not a zone-map filter: it read every row before the window)
        SELECT {cols} FROM blk_requests WHERE source_id = $sid AND (i_ns IS NULL OR i_ns < $slo)
          AND d_ns BETWEEN $slo AND $hi
        UNION ALL
        SELECT {cols} FROM blk_requests WHERE source_id = $sid AND (i_ns IS NULL OR i_ns < $slo)
          AND c_ns BETWEEN $slo AND $hi AND (d_ns IS NULL OR d_ns NOT BETWEEN $slo AND $hi)""",
        q,
        devs,
        nullable=("i_ns", "d_ns", "c_ns"),
    )
    dev_lane = lane_of("device", r["dev"], list(devs))
    start = q["lo"] // s["w0_ns"] * s["w0_ns"]
    i, c = r["i_ns"], r["c_ns"]
    has_i, has_c = r["valid_i_ns"], r["valid_c_ns"] & (c >= i)
    ins = has_i & (dev_lane >= 0) & (i >= start) & (i <= q["hi"])
    done = has_i & has_c & (dev_lane >= 0) & (c >= start) & (c <= q["hi"])
    events = {
        "lane": np.concatenate([dev_lane[ins], dev_lane[done]]),
        "t": np.concatenate([i[ins], c[done]]),
        "d": np.concatenate([np.ones(int(ins.sum()), np.int64), np.full(int(done.sum()), -1)]),
    }
    phase = {}  # per track: the requests whose phase is a segment of the window shorter than a level-1 bucket
    for track, _, a, z in BLK_PHASES:
        x, y = r[a], r[z]
        phase[track] = (
            r[f"valid_{a}"]
            & r[f"valid_{z}"]
            & (x >= q["slo"])
            & (x <= q["hi"])
            & (y >= q["lo"])
            & (y >= x)
            & (y - x < q["lo"] - q["slo"])
        )
    parts = []
    for lane in (dev_lane, lane_of("process", r["pid"])):
        for track, state, a, z in BLK_PHASES:
            m = phase[track] & (lane >= 0)
            parts.append(
                {
                    "lane": lane[m],
                    "track": np.full(int(m.sum()), track),
                    "s": r[a][m],
                    "e": r[z][m],
                    "state": np.full(int(m.sum()), names.setdefault(state, len(names))),
                    "line": r["line"][m],
                }
            )
    return {c: np.concatenate([x[c] for x in parts]) for c in SEG_COLS}, events


def lane_inputs(
    con, cache: AnalysisCache, analysis_id: str, s: dict, p: dict, lanes: list[dict], rd: dict, names: dict[str, int]
) -> dict:
    """What the lanes of one source are drawn from, as columns whose `lane` is the lane's `_index` in the response:
    the merged buckets at the lanes' bucket (`px`: lane, track, state, px, tot, n, mx, line; the depth-0 call track
    of tl_bins only ranks lanes: calls are drawn from the calls), per lane and track the `width_px` longest segments
    at least a bucket long (`segs`: lane, track, state, s, e, line, aligned; the other ones are merged too), the
    calls at least a pixel long (`calls`); and per lane its bucket (`bucket`) and requests in flight (`counter`,
    devices), set on the lanes. States are codes into `names`."""
    off, b, w0, k, q = s["clock_offset_ns"], p["b"], s["w0_ns"], rd["k"], rd["q"]
    bb = max(b, 0 if k < 0 else w0 * FAN**k)  # the lanes' bucket
    last = -(-(p["t1"] - p["t0"]) // bb) - 1
    own = [c for c in lanes if c["_lane"] is not None]
    index = np.full(max([c["_lane"] for c in own], default=0) + 1, -1, np.int64)  # source lane -> response lane
    index[[c["_lane"] for c in own]] = [c["_index"] for c in own]

    def mine(cols: dict, mask: np.ndarray) -> dict:  # the rows of the lanes drawn, with their response lane
        mask = mask & (cols["lane"] < len(index))
        mask[mask] = index[cols["lane"][mask]] >= 0
        rows = cols if mask.all() else take(cols, mask)
        return {**rows, "lane": index[rows["lane"]]}

    segs = mine(rd["long"], (rd["long"]["lvl"] > k) & (rd["long"]["track"] != 2))  # all at least a bucket long
    del segs["lvl"]
    if k < 0:  # narrower than a level-0 bucket per pixel: the raw segments (shorter than a level-1 bucket)
        raw = mine(rd["raw"], rd["raw"]["track"] != 2)
        segs = {c: np.concatenate([segs[c], raw[c]]) for c in SEG_COLS}
        bins = empty_columns(("lane", "track", "state", "t_at", "tot", "n", "mx", "line"))
    elif rd["none"]:
        bins = empty_columns(("lane", "track", "state", "t_at", "tot", "n", "mx", "line"))
    else:  # the segments shorter than a level-k bucket, from its bins
        bins = _bins(con, cache, analysis_id, s, k, q, names, index >= 0 if k >= 1 else None)
        bins["t_at"] = bins.pop("bucket") * w0 * FAN**k
        bins = mine(bins, bins["track"] != 2)
    # per lane and track the longest width_px of those at least a bucket long as they are (then by line); the
    # others merged per bucket, with the bins
    dur = segs["e"] - segs["s"]
    long = np.flatnonzero(dur >= bb)
    keep = np.zeros(len(dur), bool)
    keep[long] = longest_per_group(
        [segs["lane"][long], segs["track"][long]], dur[long], segs["line"][long], p["width_px"]
    )
    rest = np.flatnonzero(~keep)
    merged = {
        "lane": segs["lane"][rest],
        "track": segs["track"][rest],
        "state": segs["state"][rest],
        "t_at": np.maximum(segs["s"][rest], q["lo"]),
        "tot": dur[rest],
        "n": np.ones(len(rest), np.int64),
        "line": segs["line"][rest],
    }
    merged["mx"] = merged["tot"]
    if k >= 1 and not len(rest):  # the bins alone: by runs of one lane, track and state (_bins), each by bucket,
        # so by pixel (a bucket is at least one: only those clipped to the window's ends share one): no sort
        cols = [bins["lane"], bins["track"], bins["state"], np.clip((bins["t_at"] + off - p["t0"]) // bb, 0, last)]
        change = np.ones(len(cols[0]), bool)
        change[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in cols]) if len(cols[0]) else change[1:]
        (lane, track, state, px), tot, n, mx, line = runs(
            np.flatnonzero(change), cols, bins["tot"], bins["n"], bins["mx"], bins["line"]
        )
    else:
        if len(bins["lane"]):
            merged = {c: np.concatenate([bins[c], x]) for c, x in merged.items()}
        px = np.clip((merged["t_at"] + off - p["t0"]) // bb, 0, last)
        (lane, track, state, px), tot, n, mx, line = group(
            [merged["lane"], merged["track"], merged["state"], px],
            merged["tot"],
            merged["n"],
            merged["mx"],
            merged["line"],
        )
    kept = take(segs, keep)
    kept["s"], kept["e"] = kept["s"] + off, kept["e"] + off
    calls = empty_columns(CALL_COLS)
    if not rd["none"]:
        calls = _calls(con, cache, analysis_id, s, p, rd, [c for c in lanes if c["kind"] == "task"], names)
        devs = [c for c in own if c["kind"] == "device"]
        counters = _inflight(con, cache, analysis_id, s, p, rd, devs)
        for c in devs:
            c["counter"] = counters[c["id"]]
    for c in lanes:
        c["bucket_ns"] = bb
    return {
        "px": {"lane": lane, "track": track, "state": state, "px": px, "tot": tot, "n": n, "mx": mx, "line": line},
        "segs": kept,
        "calls": calls,
    }


CALL_COLS = ("lane", "func", "depth", "s", "e", "dur", "line")


def _calls(
    con, cache: AnalysisCache, analysis_id: str, s: dict, p: dict, rd: dict, tasks: list[dict], names: dict[str, int]
) -> dict[str, np.ndarray]:
    """The task lanes' calls (depth <= MAX_CALL_DEPTH) at least a pixel long overlapping the window, per lane the
    MAX_CALLS longest (then by line), as columns: lane (the response's index), func (a code into `names`), depth,
    s, e (aligned), dur, line. From tl_calls (those at least w0_ns long, kept per analysis: the AnalysisCache), and below a
    level-0 bucket per pixel the shorter ones from fg_calls too (starting at most w0_ns before the window: a range)."""
    if not tasks:
        return empty_columns(CALL_COLS)
    q, off = rd["q"], s["clock_offset_ns"]
    pids = [c["pid"] for c in tasks]
    kept, funcs, (longest, minus_dur) = _long_calls(con, cache, analysis_id, s["id"])
    # those at least a pixel long first (a prefix of the rows by length: few in a wide window), in their order
    at = np.zeros(len(longest), bool)
    at[longest[: np.searchsorted(minus_dur, -p["b"], "right")]] = True
    rows = take(kept, at)
    rows = take(rows, np.isin(rows["pid"], pids) & (rows["s"] <= q["hi"]) & (rows["e"] >= q["lo"]))
    rows["func"] = _recode(rows["func"], funcs, names)
    if rd["k"] < 0:
        short = _fetch(
            con,
            f"""
            SELECT pid, coalesce(func, '?') AS func, depth, entry_ns AS s, entry_ns + duration_ns AS e,
                   duration_ns AS dur, line FROM fg_calls
            WHERE source_id = $sid AND list_contains($pids, pid) AND depth BETWEEN 0 AND {MAX_CALL_DEPTH}
              AND entry_ns BETWEEN $lo - $w0 AND $hi AND duration_ns >= $cmin AND duration_ns < $w0
              AND entry_ns + duration_ns >= $lo""",
            {**q, "pids": pids, "cmin": p["b"], "w0": s["w0_ns"]},
            names,
        )
        rows = {c: np.concatenate([rows[c], short[c]]) for c in rows}
    rows = take(rows, longest_per_group([rows["pid"]], rows["dur"], rows["line"], MAX_CALLS))
    rows["s"], rows["e"] = rows["s"] + off, rows["e"] + off
    by_pid = sorted((c["pid"], c["_index"]) for c in tasks)
    rows["lane"] = np.array([i for _, i in by_pid], np.int64)[np.searchsorted([x for x, _ in by_pid], rows.pop("pid"))]
    return rows


def _long_calls(
    con, cache: AnalysisCache, analysis_id: str, sid: int
) -> tuple[dict[str, np.ndarray], np.ndarray, tuple]:
    """tl_calls of the source as columns (func: codes into the names returned with them) and the rows' order by
    length, the longest first, with their lengths negated (ascending), kept per analysis (the AnalysisCache)."""

    def build():
        funcs: dict[str, int] = {}
        cols = _fetch(
            con,
            "SELECT pid, coalesce(func, '?') AS func, depth, entry_ns AS s, end_ns AS e,"
            " duration_ns AS dur, line FROM tl_calls WHERE source_id = $sid AND pid IS NOT NULL",
            {"sid": sid},
            funcs,
        )
        longest = np.argsort(-cols["dur"], kind="stable")
        return cols, np.array(list(funcs) or [""], object), (longest, -cols["dur"][longest])

    return cache.shared(
        (analysis_id, "timeline-calls", sid),
        build,
        lambda x: sum(v.nbytes for v in x[0].values()) + 64 * len(x[1]) + x[2][0].nbytes + x[2][1].nbytes,
    )


def _recode(codes: np.ndarray, funcs: np.ndarray, names: dict[str, int]) -> np.ndarray:
    """Codes into `funcs` made codes into `names`."""
    used = distinct(codes)
    return np.array([names.setdefault(f, len(names)) for f in funcs[used].tolist()], np.int64)[
        np.searchsorted(used, codes)
    ]


def _depth(con, cache: AnalysisCache, analysis_id: str, sid: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device lane of the source, tl_depth's (bucket, in flight) in bucket order; kept per analysis (the AnalysisCache)."""

    def build():
        rows = run(
            con,
            "SELECT lane, bucket, inflight FROM tl_depth WHERE source_id = ? ORDER BY lane, bucket",
            [sid],
            shape="numpy",
        )
        lane, bucket, inflight = (np.asarray(rows[c], np.int64) for c in ("lane", "bucket", "inflight"))
        cuts = np.flatnonzero(np.diff(lane)) + 1
        return {
            int(ln[0]): (bk, fl)
            for ln, bk, fl in zip(*(np.split(x, cuts) for x in (lane, bucket, inflight)))
            if len(ln)
        }

    return cache.shared(
        (analysis_id, "timeline-depth", sid), build, lambda d: sum(b.nbytes + v.nbytes for b, v in d.values())
    )


def _inflight(
    con, cache: AnalysisCache, analysis_id: str, s: dict, p: dict, rd: dict, devs: list[dict]
) -> dict[str, dict]:
    """Per device lane, the requests in flight at the end of each pixel (first point: at t0): from tl_depth at the
    end of the last level-0 bucket ending by then (within w0 <= a pixel), and below a level-0 bucket per pixel exact,
    from the level-0 bucket before the window's then each insert and completion (`events` of _raw)."""
    w0, off, b, t0, t1, q = s["w0_ns"], s["clock_offset_ns"], p["b"], p["t0"], p["t1"], rd["q"]
    n_px = -(-(t1 - t0) // b)
    ends = np.minimum(t1, t0 + (np.arange(n_px, dtype=np.int64) + 1) * b)  # each pixel's end, aligned
    depth = _depth(con, cache, analysis_id, s["id"]) if devs else {}
    start_bucket = q["lo"] // w0
    out = {}
    for c in devs:
        buckets, inflight = depth.get(c["_lane"], (np.zeros(0, np.int64), np.zeros(0, np.int64)))

        def at_bucket_end(x: np.ndarray) -> np.ndarray:  # in flight at the end of each level-0 bucket
            i = np.searchsorted(buckets, x, side="right") - 1
            return np.where(i >= 0, inflight[np.maximum(i, 0)], 0) if len(buckets) else np.zeros(len(x), np.int64)

        base = int(at_bucket_end(np.array([start_bucket - 1]))[0])
        if rd["k"] < 0:  # exact: from the level-0 bucket before the window's, then each event
            mine = rd["events"]["lane"] == c["_lane"]
            t, d = rd["events"]["t"][mine], rd["events"]["d"][mine]
            order = sort_order(t)
            t, cum = t[order], base + np.concatenate([[0], np.cumsum(d[order])])
            at_t0 = int(cum[np.searchsorted(t, q["lo"], side="left")])
            values = cum[np.searchsorted(t, ends - off, side="left")]
        else:  # at the end of the last level-0 bucket that ends at or before each pixel's end
            at_t0 = base
            values = at_bucket_end((ends - off) // w0 - 1)
        keep = np.flatnonzero(np.diff(np.concatenate([[at_t0], values])) != 0)
        pts = [[t0, at_t0], *map(list, zip(ends[keep].tolist(), values[keep].tolist()))]
        top = max(at_t0, int(values[keep].max())) if len(keep) else at_t0
        out[c["id"]] = {"name": "in flight", "unit": "requests", "points": pts, "max": top}
    return out
