"""One time axis for every source: lanes of items, aggregated on the server for the pixels asked for.

Lanes (ids are stable, for the URL):
* `task:<source>:<pid>` (ftrace) — the task's states from the scheduler events (running / runnable /
  blocked, derived at ingest into `task_slices`), its waits coloured by lock (`waits`), and, zoomed in,
  its function calls (depth ≤ MAX_CALL_DEPTH, calls at least one pixel long); `print` markers of the
  task's source.
* `dev:<source>:<dev>` and `proc:<source>:<pid>` (blktrace) — each request's I→D wait (`queued`) and
  D→C service (`service`); per device also the number of requests in flight (inserted, not completed)
  at the end of each pixel.
* `window:<source>` (offcputime) — the dump's capture window, a band.
Chains of the Stalls view are arrows across lanes: from the waker / holder (or the device whose request
completed) to the waiter, at the end of the wait.

Aggregation: the window [t0, t1] is cut in `width_px` buckets of `bucket_ns`. A segment at least one
bucket long is kept as it is (clipped to the window); shorter ones are merged per bucket (the bucket their
start falls in) — for a task, the state (or the lock) that took most of the bucket's time; for block
lanes, per track — and runs of consecutive buckets with the same state become one item with its count,
its longest segment and the line of that segment (the event behind it).

A response holds every CPU track, block device and offcputime window (within bounds) and the `max_lanes` most
telling of the other lanes (`budget`). It holds at most MAX_ITEMS items: when the lanes asked for would hold more, the densest lanes are
drawn with wider buckets (the lane's `bucket_ns` doubled, and again), the same rule applied with a
coarser bucket. So a response stays small and quick to draw, whatever the trace's size.

Reads (derive/timeline.py makes the summaries they start from): a read picks the finest level whose bucket is at
least a pixel, re-buckets it to pixels and adds the segments at least one level bucket long (`tl_long`). Windows
narrower than a level-0 bucket per pixel read the raw tables instead (a range of the window: a small part of the
trace). Lanes are ranked from a coarser level (a few hundred buckets over the window), so the figures in a lane's
`why` are close to, not exactly, what the window holds (said with ≈).

The summaries above level 0, tl_depth, tl_calls and the chains are kept in memory per analysis from its first
read (the AnalysisCache's answers; ~45 MB, ~0.3 s to load, for the 17 M-event benchmark analysis), as numpy arrays found by binary
search; level 0 and the raw rows of a narrow window are one query per table, and everything is bucketed and
merged in numpy, all lanes at once. Modules: `lanes` (which lanes, ranked; arrows and markers), `levels` (what a
source's lanes are drawn from in the window), `items` (runs of merged buckets within the response's budget),
`columns` (numpy helpers over columns).

All times are on the analysis timeline (the source's own time + its clock_offset_ns).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
import orjson

from ...schema.tables import TRACKS
from .. import stored
from ..catalogue import catalogue
from .items import MAX_ITEMS, fit_items
from .lanes import Candidates, arrows, candidate_lanes, chain_links, lane_index, lane_registry, marks, task_tgids
from .levels import lane_inputs, read_source

if TYPE_CHECKING:
    from ...cache import AnalysisCache


def _sources(con, cache: AnalysisCache, analysis_id: str) -> list[dict]:
    """The analysis' sources (catalogue.py, kept: a PATCH of an offset forgets them), with the levels of their
    summaries (w0_ns, top_level; None: none)."""
    found = catalogue(con, cache, analysis_id)
    return [
        {
            "id": s.id,
            "filename": s.filename,
            "format": s.format,
            "clock_offset_ns": s.clock_offset_ns,
            "t_min_ns": s.t_min_ns,
            "t_max_ns": s.t_max_ns,
            "w0_ns": s.tl_w0_ns,
            "top_level": s.tl_top_level,
        }
        for s in (found.sources if found else ())
    ]


def _span(sources: list[dict]) -> tuple[int | None, int | None]:
    ss = [s for s in sources if s["t_min_ns"] is not None]
    lo = [s["t_min_ns"] + s["clock_offset_ns"] for s in ss]
    hi = [s["t_max_ns"] + s["clock_offset_ns"] for s in ss if s["t_max_ns"] is not None]
    return (min(lo) if lo else None, max(hi) if hi else None)


MAX_CPU_LANES = 256  # a response's CPU tracks at most (a machine's CPUs; more are asked for with lanes=)
MAX_OTHER_TRACKS = 64  # block devices and dump windows at most, beside the CPUs


def budget(candidates: Candidates, max_lanes: int) -> list[tuple]:
    """The lanes of a response, in their rank order: every CPU track (up to MAX_CPU_LANES) and every block device and
    offcputime window (up to MAX_OTHER_TRACKS) — the tracks a Perfetto or KernelShark user looks for first, few and
    thin — beside the first `max_lanes` of the other lanes (tasks, then processes issuing I/O, most telling first).
    Before, CPUs were ranked after the chains' tasks and devices and could fall outside the 40 lanes of a first view."""
    kept = {"cpu": 0, "track": 0, "other": 0}
    out = []
    for i, c in enumerate(candidates):  # (id, kind, ...)
        if i >= candidates.added and kept["other"] >= max_lanes:  # (the CPUs and tracks are all added before)
            break
        kind = "cpu" if c[1] == "cpu" else "track" if c[1] in ("device", "window") else "other"
        limit = {"cpu": MAX_CPU_LANES, "track": MAX_OTHER_TRACKS, "other": max_lanes}[kind]
        if kept[kind] < limit:
            kept[kind] += 1
            out.append(c)
    return out


def span(con, cache: AnalysisCache, analysis_id: str) -> tuple[int | None, int | None]:
    return _span(_sources(con, cache, analysis_id))


def timeline_json(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    t0: int | None,
    t1: int | None,
    width_px: int,
    lanes: list[str] | None,
    max_lanes: int,
) -> bytes:
    """timeline()'s body as JSON (the route sends it without validating it again); the whole analysis' without
    chosen lanes (the Timeline tab's first) kept per clock offsets (stored.py: its arrows are the chains')."""
    if t0 is None and t1 is None and not lanes:
        return stored.get(
            con,
            cache,
            analysis_id,
            "timeline",
            (width_px, max_lanes),
            lambda: to_json(
                timeline(
                    con, cache, analysis_id, None, None, width_px, None, max_lanes, levels_only=_levels_only(cache)
                )
            ),
            timed=True,
            raw=True,
        )
    return to_json(timeline(con, cache, analysis_id, t0, t1, width_px, lanes, max_lanes))


def to_json(body: dict) -> bytes:
    """The body as JSON, its items' int64 columns written from their arrays (no Python lists): a window's 4,000
    items took 0.8 ms with pydantic_core from lists (after 0.5 ms of tolist), 0.2 ms this way."""
    return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)


def _levels_only(cache: AnalysisCache) -> bool:
    """Whether the whole analysis' view read now reads only the levels of the summaries it draws from, without
    keeping them (levels.py's _summary): when it is being stored (a precompute's RecordingCache: the ingest's first
    views, the warm-up, which then builds the whole summaries), not for a request (whose zooms that follow read the
    summaries)."""
    return cache.storing


def timeline(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    t0: int | None,
    t1: int | None,
    width_px: int,
    lanes: list[str] | None,
    max_lanes: int,
    levels_only: bool = False,
) -> dict:
    """The response body, complete (every field of the response model: the route sends it without validating).
    With `levels_only`, the summaries' levels drawn from are read, not kept (_levels_only)."""
    sources = _sources(con, cache, analysis_id)
    lo, hi = _span(sources)
    t0 = lo if t0 is None else t0
    t1 = hi if t1 is None else t1
    out = {
        "t0_ns": t0,
        "t1_ns": t1,
        "width_px": width_px,
        "bucket_ns": None,
        "lanes": [],
        "arrows": [],
        "marks": [],
        "total_lanes": 0,
        "tracks": list(TRACKS),
        "max_items": MAX_ITEMS,
    }
    if t0 is None or t1 is None or t1 <= t0:
        return out
    b = max(1, -(-(t1 - t0) // width_px))
    out["bucket_ns"] = b
    p = {"aid": analysis_id, "t0": t0, "t1": t1, "b": b, "width_px": width_px}
    chains = chain_links(con, cache, analysis_id, sources, p) if any(s["format"] == "ftrace" for s in sources) else []
    names: dict[str, int] = {}  # the state names of this response -> their codes in the columns read
    registry = lane_registry(con, cache, analysis_id)
    reads = {
        s["id"]: read_source(con, cache, analysis_id, s, p, registry.get(s["id"], {}), names, levels_only)
        for s in sources
        if s["w0_ns"] is not None
    }
    candidates = candidate_lanes(
        p,
        sources,
        chains,
        registry,
        reads,
        names,
        task_tgids(con, cache, analysis_id),
        lane_index(cache, analysis_id, registry),
    )
    out["total_lanes"] = len(candidates)
    if lanes:
        wanted = set(lanes)
        chosen = []
        for c in candidates:
            if c[0] in wanted:
                chosen.append(candidates.lane(c))
                if len(chosen) == len(wanted):
                    break
    else:
        chosen = [candidates.lane(c) for c in budget(candidates, max_lanes)]
    by_source = defaultdict(list)
    for i, c in enumerate(chosen):
        c.update(segs=None, bucket_ns=None, counter=None, band=c.get("band"), _index=i)
        if c["kind"] != "window":
            by_source[c["source_id"]].append(c)
    parts = [
        lane_inputs(con, cache, analysis_id, s, p, by_source[s["id"]], reads[s["id"]], names)
        for s in sources
        if by_source.get(s["id"]) and s["id"] in reads
    ]
    fit_items(
        chosen,
        {k: {c: np.concatenate([x[k][c] for x in parts]) for c in parts[0][k]} for k in ("px", "segs", "calls")}
        if parts
        else None,
        p,
        list(names),
    )
    for c in chosen:
        c.pop("_lane", None), c.pop("_index", None)
    out["lanes"] = chosen
    out["arrows"] = arrows(chains, {c["id"] for c in chosen})
    out["marks"] = marks(con, cache, analysis_id, sources, p)
    return out
