"""Flame-graph trees from off-CPU stacks: pure functions, no database.

rows: an iterable of (frames, value_us) with frames ROOT FIRST (as in `offcpu_stacks.frames`). Rows whose
value is None (incomplete records) are left out; a `-` frame (user/kernel delimiter) is an ordinary frame.

build_tree -> {"name": "all", "value": total, "children": [...]}: frames merged by name at each level
(a node's value includes its descendants), children sorted by value descending (ties: by name). Nodes
worth less than min_fraction × total are folded into one "other" child of their parent (its value is
their sum, it has no children): with the default 1/3840 a node narrower than half a pixel of a 1920 px
flame graph is never sent. invert=True builds the callers-of-leaf tree (each stack reversed first).
filter keeps only the stacks with a frame containing that substring (case-sensitive).

diff_trees(a_rows, b_rows) -> the same shape for a differential flame graph: `value` is b's value, and
each node has `delta` = b − a. Nodes only in a are kept with value 0 and a negative delta. A node is
folded into "other" when both its a and b values are below min_fraction × max(total a, total b).

lock_totals(rows, lock_of) -> per lock, the value of the stacks on it, each stack counted once per lock.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..distinct import distinct

Rows = Iterable[tuple[Sequence[str], int | None]]


def _trie(rows: Rows, slot: int, root: dict, invert: bool, filter: str | None) -> int:
    """Adds rows into root (name -> [a, b, children]) at value slot 0 or 1; returns their total."""
    total = 0
    for frames, value in rows:
        if value is None:
            continue
        if filter is not None and not any(filter in f for f in frames):
            continue
        total += value
        level = root
        for f in reversed(frames) if invert else frames:
            node = level.get(f)
            if node is None:
                node = level[f] = [0, 0, {}]
            node[slot] += value
            level = node[2]
    return total


def _emit(level: dict, threshold: float, diff: bool) -> list[dict]:
    kept, other_a, other_b, folded = [], 0, 0, 0
    for name, (a, b, children) in level.items():
        if max(a, b) >= threshold and max(a, b) > 0:
            node = {"name": name, "value": b}
            if diff:
                node["delta"] = b - a
            node["children"] = _emit(children, threshold, diff)
            kept.append(node)
        else:
            other_a += a
            other_b += b
            folded += 1
    if folded and (other_a or other_b):
        node = {"name": "other", "value": other_b}
        if diff:
            node["delta"] = other_b - other_a
        node["children"] = []
        kept.append(node)
    kept.sort(key=lambda n: (-n["value"], n["name"]))
    return kept


def build_tree(rows: Rows, *, invert: bool = False, filter: str | None = None, min_fraction: float = 1 / 3840) -> dict:
    root: dict = {}
    total = _trie(rows, 1, root, invert, filter)
    return {"name": "all", "value": total, "children": _emit(root, min_fraction * total, False)}


def diff_trees(
    a_rows: Rows, b_rows: Rows, *, invert: bool = False, filter: str | None = None, min_fraction: float = 1 / 3840
) -> dict:
    root: dict = {}
    total_a = _trie(a_rows, 0, root, invert, filter)
    total_b = _trie(b_rows, 1, root, invert, filter)
    return {
        "name": "all",
        "value": total_b,
        "delta": total_b - total_a,
        "children": _emit(root, min_fraction * max(total_a, total_b), True),
    }


# ---- the same tree from columns, without a Python loop per frame --------------------------------------------------


def build_tree_columns(
    paths: pa.ListArray,
    values: np.ndarray,
    *,
    invert: bool = False,
    filter: str | None = None,
    min_fraction: float = 1 / 3840,
) -> tuple[dict, int, int, int]:
    """build_tree for stacks given as columns: paths (list<string>, root first, one per record; identical paths
    need not be merged first) and their values (int64, none null). Returns (tree, total of every record,
    distinct paths, matched: the total of the records the filter keeps).

    The trie is built a depth at a time with numpy: frame names dictionary-encoded, each node of depth d is a
    unique (node of depth d - 1, name) pair; only the nodes kept (>= min_fraction of the total) become dicts.
    Equal to build_tree (tests/test_heatindex.py compares them); ~25x faster on 100 k records of 29 frames."""
    paths = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    n = len(paths)
    values = np.asarray(values, np.int64)
    offsets = paths.offsets.to_numpy().astype(np.int64)
    lens = np.diff(offsets)
    flat = paths.values.slice(offsets[0], offsets[-1] - offsets[0]) if n else pa.array([], pa.string())
    rec = np.repeat(np.arange(n), lens)  # the record of each frame
    keep = np.ones(n, bool)
    if filter is not None:
        hit = pc.match_substring(flat, filter).to_numpy(zero_copy_only=False) if len(flat) else np.zeros(0, bool)
        keep = np.bincount(rec[hit], minlength=n) > 0
    kept_values = np.where(keep, values, 0)
    total, matched = int(values.sum()), int(kept_values.sum())
    encoded = pc.dictionary_encode(flat)
    codes = encoded.indices.to_numpy().astype(np.int64)
    names = encoded.dictionary.to_pylist()
    k = max(1, len(names))
    pos = np.arange(len(flat)) - np.repeat(offsets[:-1] - offsets[0], lens)
    depth = np.repeat(lens, lens) - 1 - pos if invert else pos
    small = np.uint16 if len(depth) == 0 or depth.max() < 1 << 16 else np.uint32
    order = np.argsort(depth.astype(small), kind="stable")  # by depth (radix sort), records in order within one
    level_starts = np.searchsorted(depth[order], np.arange(int(lens.max(initial=0)) + 1))
    node = np.full(n, -1, np.int64)  # each record's node at the depth last done
    parents, name_codes, node_values = [], [], []
    first = prev_first = 0  # global id of the first node of this depth, of the one before
    for d in range(len(level_starts) - 1):
        at = order[level_starts[d] : level_starts[d + 1]]
        r = rec[at]
        key = (node[r] - prev_first) * k + codes[at] if d else codes[at]
        uniq, inv = np.unique(key, return_inverse=True)
        parents.append(uniq // k + prev_first if d else np.full(len(uniq), -1, np.int64))
        name_codes.append(uniq % k)
        node_values.append(_sums(inv, kept_values[r], len(uniq)))
        node[r] = first + inv
        prev_first, first = first, first + len(uniq)
    distinct_paths = len(distinct(node + 1)) if n else 0  # (node -1: a record without frames)
    if not parents:
        return {"name": "all", "value": matched, "children": []}, total, distinct_paths, matched
    parent = np.concatenate(parents)
    name = np.concatenate(name_codes)
    value = np.concatenate(node_values)
    tree = _emit_columns(parent, name, value, names, matched, min_fraction * matched)
    return tree, total, distinct_paths, matched


def _sums(groups: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of weights per group."""
    out = np.zeros(size, np.int64)
    np.add.at(out, groups, weights)
    return out


def _emit_columns(
    parent: np.ndarray, name: np.ndarray, value: np.ndarray, names: list[str], total: int, threshold: float
) -> dict:
    """_emit over node columns (parent ascending, as the nodes are made): children of a node kept when worth
    threshold or more (and more than 0), the others folded into one "other" child; children sorted by value
    descending, then name. Only the nodes kept are looked at one by one."""
    keep = (value >= threshold) & (value > 0)
    size = len(parent) + 1  # parent + 1: 0 is the root
    all_sum = np.bincount(parent + 1, weights=value, minlength=size)
    all_n = np.bincount(parent + 1, minlength=size)
    kept = np.flatnonzero(keep)
    kept_parent = parent[kept] + 1
    kept_sum = np.bincount(kept_parent, weights=value[kept], minlength=size)
    kept_n = np.bincount(kept_parent, minlength=size)
    bounds = np.concatenate(([0], np.cumsum(kept_n)))  # kept children of node p (+1): kept[bounds[p]:bounds[p+1]]
    other = np.rint(all_sum - kept_sum).astype(np.int64) if len(parent) else all_sum.astype(np.int64)
    folded = all_n - kept_n
    kept_l, value_l, name_l = kept.tolist(), value.tolist(), name.tolist()

    def children(p: int) -> list[dict]:
        out = [
            {"name": names[name_l[c]], "value": value_l[c], "children": children(c + 1)}
            for c in kept_l[bounds[p] : bounds[p + 1]]
        ]
        if folded[p] and other[p]:
            out.append({"name": "other", "value": int(other[p]), "children": []})
        out.sort(key=lambda x: (-x["value"], x["name"]))
        return out

    return {"name": "all", "value": total, "children": children(0)}


# ---- what each lock costs: each stack counted once per lock ------------------------------------------------------


def lock_totals(rows: Rows, lock_of: Callable[[str], str | None], *, filter: str | None = None) -> list[dict]:
    """[{lock, value}] by value descending: per lock (lock_of(frame): the lock a frame takes or sleeps on),
    the value of the stacks with at least one frame on it. A stack counts once per lock, whatever frames sit
    between its frames on that lock (down_write → call_rwsem_down_write_failed → rwsem_down_write_failed is one
    wait on `rwsem (write)`). The reference of lock_totals_columns."""
    value: dict[str, int] = {}
    for frames, v in rows:
        if v is None or (filter is not None and not any(filter in f for f in frames)):
            continue
        for lock in {lock_of(f) for f in frames} - {None}:
            value[lock] = value.get(lock, 0) + v
    return sorted(({"lock": k, "value": v} for k, v in value.items()), key=lambda x: (-x["value"], x["lock"]))


def lock_totals_columns(
    paths: pa.ListArray, values: np.ndarray, lock_of: Callable[[str], str | None], *, filter: str | None = None
) -> list[dict]:
    """lock_totals over columns (paths: list<string>, one per record; values: int64): each distinct frame name is
    looked up once, the (record, lock) pairs made unique with numpy."""
    paths = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    n = len(paths)
    if not n:
        return []
    values = np.asarray(values, np.int64)
    offsets = paths.offsets.to_numpy().astype(np.int64)
    lens = np.diff(offsets)
    flat = paths.values.slice(offsets[0], offsets[-1] - offsets[0])
    rec = np.repeat(np.arange(n), lens)
    counted = np.ones(n, bool)  # the records the filter keeps
    if filter is not None:
        hit = pc.match_substring(flat, filter).to_numpy(zero_copy_only=False) if len(flat) else np.zeros(0, bool)
        counted = np.bincount(rec[hit], minlength=n) > 0
    encoded = pc.dictionary_encode(flat)
    names = encoded.dictionary.to_pylist()
    found = [lock_of(f) if f is not None else None for f in names]
    lock_names = sorted({x for x in found if x is not None})
    if not lock_names:
        return []
    lock_id = np.array([lock_names.index(x) if x is not None else -1 for x in found], np.int64)
    frame_lock = lock_id[encoded.indices.to_numpy().astype(np.int64)]
    on = frame_lock >= 0
    pairs = np.unique(rec[on] * len(lock_names) + frame_lock[on])  # each (record, lock) once
    r, lk = pairs // len(lock_names), pairs % len(lock_names)
    keep = counted[r]
    r, lk = r[keep], lk[keep]
    value = np.zeros(len(lock_names), np.int64)
    np.add.at(value, lk, values[r])
    stacks = np.bincount(lk, minlength=len(lock_names))
    out = [{"lock": name, "value": int(value[i])} for i, name in enumerate(lock_names) if stacks[i]]
    return sorted(out, key=lambda x: (-x["value"], x["lock"]))
