"""numpy over columns (dicts of equal-length arrays): selecting rows, grouping by keys, runs, the longest per group."""

from __future__ import annotations

import numpy as np


def take(cols: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of mask (the columns themselves when it holds every row)."""
    if mask.dtype == bool and mask.all():
        return dict(cols)
    return {k: v[mask] for k, v in cols.items()}


def empty_columns(names: tuple, n: int = 0) -> dict[str, np.ndarray]:
    return {c: np.zeros(n, np.int64) for c in names}


def longest_per_group(keys: list[np.ndarray], dur: np.ndarray, line: np.ndarray, m: int) -> np.ndarray:
    """Which rows are among the m longest of their group (rows with the same keys), ties by line (the first)."""
    keep = np.ones(len(dur), bool)
    if len(dur) <= m:
        return keep
    inv = dense(sort_key(keys))
    for g in np.flatnonzero(np.bincount(inv) > m).tolist():  # few: per lane and track
        idx = np.flatnonzero(inv == g)
        d = dur[idx]
        cut = np.partition(d, len(d) - m)[len(d) - m]  # the m-th longest
        ties = idx[d == cut]
        keep[idx[d < cut]] = False
        keep[ties[np.argsort(line[ties], kind="stable")[m - int((d > cut).sum()) :]]] = False
    return keep


def dense(key: np.ndarray) -> np.ndarray:
    """The keys (>= 0) as they are when they span few more values than there are rows, else their ranks: indexes
    of arrays of a size about the rows'."""
    return ranks(key) if len(key) and int(key.max()) >= 4 * len(key) + 4096 else key


def ranks(x: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (np.unique's inverse, by a sort)."""
    order = sort_order(x)
    ranks = np.empty(len(x), np.int64)
    ranks[order] = np.cumsum(np.concatenate([[False], x[order][1:] != x[order][:-1]]))
    return ranks


def sort_order(x: np.ndarray) -> np.ndarray:
    """The stable order of the values (as np.argsort(kind="stable")): of values >= 0, by a radix sort of 16 bits a
    pass, from the lowest (numpy's stable sort of 16-bit integers is one: 3-4x quicker than argsort on 200 k int64 keys
    of 2 passes, the summaries' rows of a wide window)."""
    if not len(x):
        return np.zeros(0, np.int64)
    if int(x.min()) < 0:
        return np.argsort(x, kind="stable")
    bits = int(x.max()).bit_length()
    if bits <= 16:
        return np.argsort(x.astype(np.uint16), kind="stable")
    order = np.argsort((x & 0xFFFF).astype(np.uint16), kind="stable")
    for shift in range(16, bits, 16):
        digit = ((x[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


def sort_key(keys: list[np.ndarray]) -> np.ndarray:
    """One int64 per row ordered as the rows' keys (each >= 0) are, lexicographically."""
    key = np.zeros(len(keys[0]), np.int64)
    for k in keys:
        size = int(k.max()) + 1 if len(k) else 1
        if len(key) and (int(key.max()) + 1) * size >= 1 << 62:  # too wide: the keys so far ranked first
            key = ranks(key)
        key = key * size + k
    return key


def group(keys: list[np.ndarray], tot, n, mx, line):
    """Rows grouped by keys (each >= 0): (keys of each group, sum tot, sum n, max mx, the line of the max: the
    first on ties), groups in the keys' order. Summed into arrays indexed by the key (no sort) when the keys span
    few more values than there are rows; else the rows sorted by their keys (radix: sort_order), then each run
    of equal keys summed (before: by the keys' ranks, an argsort, 3-4x slower on a wide window's 200 k rows)."""
    return group_by_key(sort_key(keys), keys, tot, n, mx, line)


def group_by_key(key: np.ndarray, keys: list[np.ndarray], tot, n, mx, line):
    """group, with the keys' sort_key given."""
    if not len(key):
        return [k[:0] for k in keys], tot[:0], n[:0], mx[:0], line[:0]
    size = int(key.max()) + 1
    if size >= 4 * len(key) + 4096:
        order = sort_order(key)
        key = key[order]
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        return runs(starts, [k[order] for k in keys], tot[order], n[order], mx[order], line[order])
    first = np.full(size, len(key))
    np.minimum.at(first, key, np.arange(len(key)))
    at = first < len(key)
    sums = [np.zeros(size, np.int64) for _ in range(2)]
    np.add.at(sums[0], key, tot)
    np.add.at(sums[1], key, n)
    top = np.full(size, np.iinfo(np.int64).min)
    np.maximum.at(top, key, mx)
    is_top = mx == top[key]
    top_line = np.full(size, np.iinfo(np.int64).max)
    np.minimum.at(top_line, key[is_top], line[is_top])
    rows = first[at]
    return [k[rows] for k in keys], sums[0][at], sums[1][at], top[at], top_line[at]


def runs(starts: np.ndarray, keys: list[np.ndarray], tot, n, mx, line):
    """As group, for rows whose groups are runs beginning at `starts`."""
    if not len(starts):
        return [k[:0] for k in keys], tot[:0], n[:0], mx[:0], line[:0]
    top = np.maximum.reduceat(mx, starts)
    at_top = np.where(mx == np.repeat(top, np.diff(np.append(starts, len(mx)))), line, np.iinfo(np.int64).max)
    return (
        [k[starts] for k in keys],
        np.add.reduceat(tot, starts),
        np.add.reduceat(n, starts),
        top,
        np.minimum.reduceat(at_top, starts),
    )
