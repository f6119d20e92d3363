"""Numpy over a derive step's columns: `next_after` (an ASOF join on arrays: DuckDB's cost ~3x the rest of the
statements that used one), `key_ids` (rows numbered by their key of several columns), a column as (values, valid) arrays (`ints`), and their selections (`take`, `spread`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def next_after(key: np.ndarray, line: np.ndarray, b_key: np.ndarray, b_line: np.ndarray) -> np.ndarray:
    """Per row of (key, line): the index of the row of (b_key, b_line) with the same key and the nearest line after
    its line, -1 for none (as `ASOF LEFT JOIN b ON key = b.key AND b.line > line`; each line once in b). Keys and
    lines are ranked, then packed in one integer: key rank, then line rank."""
    out = np.full(len(line), -1, np.int64)
    if not len(line) or not len(b_line):
        return out
    n = len(key)
    group = np.unique(np.concatenate([key, b_key]), return_inverse=True)[1].reshape(-1).astype(np.int64)
    rank = np.unique(np.concatenate([line, b_line]), return_inverse=True)[1].reshape(-1).astype(np.int64)
    shift = max(1, int(rank.max()) + 1).bit_length()
    packed = (group << shift) | rank
    order = np.argsort(packed[n:], kind="stable")
    b_packed = packed[n:][order]
    j = np.searchsorted(b_packed, packed[:n], "right")
    hit = j < len(b_packed)
    hit[hit] = b_packed[j[hit]] >> shift == group[:n][hit]
    out[hit] = order[j[hit]]
    return out


def key_ids(*cols: np.ndarray) -> np.ndarray:
    """Each row's key (its values in `cols`, integer arrays of one length) numbered among the distinct keys in their
    order (column by column): np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)'s numbers, by one sort:
    of the columns packed in one integer when their ranges fit in 63 bits (HolderFinder's 3.5 M lock calls of the 1
    GiB trace.dat: 0.5 -> 0.1 s), else a lexsort (np.unique sorts the rows as records, a call per comparison: ~6x
    slower)."""
    n = len(cols[0])
    out = np.zeros(n, np.int64)
    if not n:
        return out
    new_key = np.zeros(n, bool)
    packed = _packed(cols)
    if packed is not None:
        order = np.argsort(packed)
        in_order = packed[order]
        new_key[1:] = in_order[1:] != in_order[:-1]
    else:
        order = np.lexsort(cols[::-1])
        for col in cols:
            in_order = col[order]
            new_key[1:] |= in_order[1:] != in_order[:-1]
    out[order] = np.cumsum(new_key)
    return out


def _packed(cols: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """The integer columns as one int64 in the same order (each column's offset from its least value, the first
    column in the highest bits), or None when their ranges need more than 63 bits."""
    lows, bits = [], []
    for col in cols:
        low, high = int(col.min()), int(col.max())
        lows.append(low)
        bits.append((high - low).bit_length())
    if sum(bits) > 63:
        return None
    packed = np.zeros(len(cols[0]), np.int64)
    for col, low, width in zip(cols, lows, bits):
        packed <<= width
        packed |= col.astype(np.int64) - low
    return packed


def ints(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0 or false, valid) of a column."""
    filled = col.fill_null(False if pa.types.is_boolean(col.type) else 0)
    return filled.to_numpy(zero_copy_only=False), col.is_valid().to_numpy(zero_copy_only=False)


def take(col: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return col[0][rows], col[1][rows]


def spread(values: np.ndarray, rows: np.ndarray, where: np.ndarray) -> np.ndarray:
    out = np.zeros(len(where), np.int64)
    out[where] = values[rows]
    return out
