"""A response's items: per lane, runs of merged buckets and the segments and calls at least a bucket long, the
densest lanes drawn with wider buckets until the response holds at most MAX_ITEMS."""

from __future__ import annotations

import numpy as np

from ...distinct import distinct
from ...schema.tables import TRACKS
from .columns import dense, group, group_by_key, runs, sort_key, sort_order, take

MAX_ITEMS = 12_000  # drawable items in one response, all lanes together
DOMINANT = (True, True, False, False, False)  # per track: a merged bucket shows its dominant state, else each state


def _items(inp: dict, ls: list[int], bucket: np.ndarray, f: np.ndarray, p: dict, names: list[str]) -> dict[int, dict]:
    """The items of the lanes ls (indexes of the response's lanes) with buckets f times each lane's `bucket` (arrays
    over the response's lanes): per lane its columns, `states` the names its state codes index (inp's states and
    call functions are codes into `names`)."""
    t0, t1 = p["t0"], p["t1"]
    want = np.zeros(len(bucket), bool)
    want[ls] = True
    bb = bucket * f
    px, sg, calls = (take(inp[k], want[inp[k]["lane"]]) for k in ("px", "segs", "calls"))
    calls = take(calls, calls["dur"] >= bb[calls["lane"]])
    # each lane's own state codes: the rank of the name among those of the lane, by name
    size = len(names) + 1
    by_name = np.argsort(np.array(names, dtype=object), kind="stable")
    rank = np.empty(len(names), np.int64)
    rank[by_name] = np.arange(len(names))
    used = distinct(
        np.concatenate([x["lane"] * size + rank[x[c]] for x, c in ((px, "state"), (sg, "state"), (calls, "func"))])
    )
    first = np.searchsorted(used, np.arange(len(bucket) + 1) * size)
    at = None
    if len(bucket) * size <= 1 << 21:  # lane * size + rank -> the code in its lane, looked up (else searched)
        at = np.zeros(len(bucket) * size, np.int64)
        at[used] = np.arange(len(used)) - first[used // size]

    def local(lane: np.ndarray, code: np.ndarray) -> np.ndarray:
        if at is not None:
            return at[lane * size + rank[code]]
        return np.searchsorted(used, lane * size + rank[code]) - first[lane]

    # px holds one row per lane, track, state and lane bucket, by runs of one lane, track and state, each by
    # bucket (lane_inputs): merged again only in lanes with wider buckets (f > 1), a row per run of rows falling in
    # one wider bucket, then with their segments now shorter than a bucket
    dur = sg["e"] - sg["s"]
    short = dur < bb[sg["lane"]]
    again = f[px["lane"]] > 1
    every = bool(again.all())  # (a wide window: every lane coarser) the columns as they are

    def merging(col: np.ndarray) -> np.ndarray:
        return col if every else col[again]

    lane, track, state = merging(px["lane"]), merging(px["track"]), merging(px["state"])
    pos = merging(px["px"]) // f[lane]
    change = np.ones(len(lane), bool)
    change[1:] = (lane[1:] != lane[:-1]) | (track[1:] != track[:-1]) | (state[1:] != state[:-1]) | (pos[1:] != pos[:-1])
    (gl, gt, gp, gs), gtot, gn, gmx, gln = runs(
        np.flatnonzero(change),
        [lane, track, pos, state],
        merging(px["tot"]),
        merging(px["n"]),
        merging(px["mx"]),
        merging(px["line"]),
    )
    if short.any():
        (gl, gt, gp, gs), gtot, gn, gmx, gln = group(
            [
                np.concatenate([gl, sg["lane"][short]]),
                np.concatenate([gt, sg["track"][short]]),
                np.concatenate([gp, (np.maximum(sg["s"][short], t0) - t0) // bb[sg["lane"][short]]]),
                np.concatenate([gs, sg["state"][short]]),
            ],
            np.concatenate([gtot, dur[short]]),
            np.concatenate([gn, np.ones(int(short.sum()), np.int64)]),
            np.concatenate([gmx, dur[short]]),
            np.concatenate([gln, sg["line"][short]]),
        )
    same = ~again
    gl, gt, gp, gs, gtot, gn, gmx, gln = (
        np.concatenate([x, px[c][same]])
        for x, c in (
            (gl, "lane"),
            (gt, "track"),
            (gp, "px"),
            (gs, "state"),
            (gtot, "tot"),
            (gn, "n"),
            (gmx, "mx"),
            (gln, "line"),
        )
    )
    gs = local(gl, gs)
    # per track and pixel: the dominant state (tracks of tasks: the most time in the pixel, then the last name),
    # else every state on its own
    dom = np.asarray(DOMINANT)[gt]
    dl, dt, dp, ds, dtot = gl[dom], gt[dom], gp[dom], gs[dom], gtot[dom]
    pixel = sort_key([dl, dt, dp])
    _, _, pn, pmx, pln = group_by_key(pixel, [dl, dt, dp], dtot, gn[dom], gmx[dom], gln[dom])  # all states of it
    pixel = dense(pixel)  # as group numbers the pixels: its groups in the order of these
    most = np.full(int(pixel.max()) + 1 if len(pixel) else 0, -1)
    np.maximum.at(most, pixel, dtot)
    top = dtot == most[pixel]
    last = np.full(len(most), -1)
    np.maximum.at(last, pixel[top], ds[top])
    pick = np.full(len(most), -1)
    pick[pixel[top & (ds == last[pixel])]] = np.flatnonzero(top & (ds == last[pixel]))
    pick = pick[pick >= 0]
    kl, kt, kp, ks, kn, kmx, kln = (
        np.concatenate(x)
        for x in zip(
            (dl[pick], dt[pick], dp[pick], ds[pick], pn, pmx, pln),
            (gl[~dom], gt[~dom], gp[~dom], gs[~dom], gn[~dom], gmx[~dom], gln[~dom]),
        )
    )
    order = sort_order(sort_key([kl, kt, ks, kp]))  # (keys unique: the order of any sort)
    kl, kt, kp, ks, kn, kmx, kln = (x[order] for x in (kl, kt, kp, ks, kn, kmx, kln))
    run = np.ones(len(kt), bool)  # runs: consecutive pixels of one lane, track and state
    run[1:] = (kl[1:] != kl[:-1]) | (kt[1:] != kt[:-1]) | (ks[1:] != ks[:-1]) | (kp[1:] != kp[:-1] + 1)
    starts = np.flatnonzero(run)
    _, _, rn, rmx, rln = runs(starts, [], kn, kn, kmx, kln)
    ends = np.append(starts[1:], len(kt))[: len(starts)] - 1
    lbb = bb[kl[starts]]
    long = ~short  # segments at least a bucket long, as they are (clipped to the window)
    cols = [
        np.concatenate(x)
        for x in zip(
            (
                kl[starts],
                kt[starts],
                ks[starts],
                kp[starts] * lbb,
                np.minimum(t1 - t0, (kp[ends] + 1) * lbb),
                rn,
                rmx,
                rln,
                np.full(len(starts), -1),
            ),
            (
                sg["lane"][long],
                sg["track"][long],
                local(sg["lane"][long], sg["state"][long]),
                np.maximum(sg["s"][long], t0) - t0,
                np.minimum(sg["e"][long], t1) - t0,
                np.ones(int(long.sum()), np.int64),
                dur[long],
                sg["line"][long],
                np.full(int(long.sum()), -1),
            ),
            (
                calls["lane"],
                np.full(len(calls["dur"]), 2),
                local(calls["lane"], calls["func"]),
                np.maximum(calls["s"], t0) - t0,
                np.minimum(calls["e"], t1) - t0,
                np.ones(len(calls["dur"]), np.int64),
                calls["dur"],
                calls["line"],
                calls["depth"],
            ),
        )
    ]
    order = sort_order(sort_key([cols[0], cols[1], cols[8] + 1, cols[3], cols[2]]))  # stable; per track (calls
    lane, track, state, i0, i1, n, mx, line, depth = (c[order] for c in cols)  # by depth) in time order
    bounds = np.searchsorted(lane, np.arange(len(bucket) + 1)).tolist()
    state_names = [names[i] for i in by_name[used % size].tolist()]  # each lane's, in turn (first)
    depths = [None] * len(depth)  # null but for calls
    for i, d in zip(np.flatnonzero(depth >= 0).tolist(), depth[depth >= 0].tolist()):
        depths[i] = d
    first = first.tolist()
    out = {}
    for ln in ls:
        a, z = bounds[ln], bounds[ln + 1]
        out[ln] = {  # int64 columns as they are: written by orjson (timeline_json)
            "states": state_names[first[ln] : first[ln + 1]],
            "track": track[a:z],
            "state": state[a:z],
            "t0": i0[a:z],
            "t1": i1[a:z],
            "n": n[a:z],
            "max": mx[a:z],
            "line": line[a:z],
            "depth": depths[a:z],
        }
    return out


def _counts(inp: dict, bucket: np.ndarray, f: np.ndarray) -> np.ndarray:
    """About how many items _items makes per lane (at most one merged item per track and bucket, plus the segments
    and calls at least a bucket long), over the response's lanes: to choose the lanes' first coarsening without
    building it."""
    bb = bucket * f
    px, sg, calls = inp["px"], inp["segs"], inp["calls"]
    pos = px["px"] // f[px["lane"]]
    cells = len(TRACKS) * (int(pos.max()) + 1 if len(pos) else 1)
    seen = np.zeros(len(bucket) * cells, bool)  # per lane, track and bucket: merged items there
    seen[px["lane"] * cells + px["track"] * (cells // len(TRACKS)) + pos] = True
    return (
        seen.reshape(len(bucket), cells).sum(axis=1)
        + np.bincount(sg["lane"][sg["e"] - sg["s"] >= bb[sg["lane"]]], minlength=len(bucket))
        + np.bincount(calls["lane"][calls["dur"] >= bb[calls["lane"]]], minlength=len(bucket))
    )


def fit_items(chosen: list[dict], inp: dict | None, p: dict, names: list[str]) -> None:
    """Each lane's items (`segs`) and bucket (`bucket_ns`), doubling the buckets of the densest lanes until the
    response holds at most MAX_ITEMS: first from estimates (each lane within its share), then from the items built."""
    empty = {"states": [], **{k: [] for k in ("track", "state", "t0", "t1", "n", "max", "line", "depth")}}
    built = [i for i, c in enumerate(chosen) if c["bucket_ns"] is not None]
    for c in chosen:
        c["segs"] = empty
    if not built:
        return
    span = p["t1"] - p["t0"]
    bucket = np.array([c["bucket_ns"] or 0 for c in chosen], np.int64)
    f = np.ones(len(chosen), np.int64)
    share = MAX_ITEMS // len(built)
    est = _counts(inp, bucket, f)
    if est.sum() > MAX_ITEMS:
        grow = np.flatnonzero((est > share) & (bucket * f < span))
        while len(grow):
            f[grow] *= 2
            est[grow] = _counts(inp, bucket, f)[grow]
            grow = grow[(est[grow] > share) & (bucket[grow] * f[grow] < span)]
    for i, items in _items(inp, built, bucket, f, p, names).items():
        chosen[i]["segs"] = items
    total = sum(len(chosen[i]["segs"]["t0"]) for i in built)
    while total > MAX_ITEMS:
        i = max(built, key=lambda i: (len(chosen[i]["segs"]["t0"]), -f[i]))
        if bucket[i] * f[i] >= span:
            break
        before = len(chosen[i]["segs"]["t0"])
        f[i] *= 2
        chosen[i]["segs"] = _items(inp, [i], bucket, f, p, names)[i]
        total += len(chosen[i]["segs"]["t0"]) - before
    for i in built:
        chosen[i]["bucket_ns"] = int(bucket[i] * f[i])
