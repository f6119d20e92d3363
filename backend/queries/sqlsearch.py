"""SQL that places a value among sorted constants by binary search: nested CASEs, ~log2 of the constants'
comparisons a row (a heatmap's latency bins, the runs of lines between a capture's lost-events markers)."""

from __future__ import annotations

from typing import Callable


def rank_case(expr: str, values: list[int], *, strict: bool = False, leaf: Callable[[int], str] = str) -> str:
    """SQL: leaf(k), k the number of `values` (sorted ascending) at or below `expr` (strict: below it), 0..len."""
    above = ">" if strict else ">="

    def search(lo: int, hi: int) -> str:  # k is in lo..hi
        if lo == hi:
            return leaf(lo)
        mid = (lo + hi + 1) // 2  # k >= mid when expr is above (or at) values[mid - 1]
        return f"CASE WHEN {expr} {above} {values[mid - 1]} THEN {search(mid, hi)} ELSE {search(lo, mid - 1)} END"

    return search(0, len(values))
