"""numpy over columns (dicts of equal-length arrays): selecting rows, grouping by keys, runs, the longest per group."""

from __future__ import annotations

import numpy as np


def take(cols: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
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


def distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (np.unique, by a sort)."""
    x = np.sort(x)
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if len(x) else x


def dense(key: np.ndarray) -> np.ndarray:
    """The keys (>= 0) as they are when they span few more values than there are rows, else their ranks: indexes
    of arrays of a size about the rows'."""
    return ranks(key) if len(key) and int(key.max()) >= 4 * len(key) + 4096 else key


def ranks(x: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (np.unique's inverse, by a sort)."""
    order = np.argsort(x)
    ranks = np.empty(len(x), np.int64)
    ranks[order] = np.cumsum(np.concatenate([[False], x[order][1:] != x[order][:-1]]))
    return ranks


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
    first on ties), groups in the keys' order. Summed into arrays indexed by the key (no sort), or by its rank
    when the keys span many more values than there are rows."""
    key = dense(sort_key(keys))
    size = int(key.max()) + 1 if len(key) else 0
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
