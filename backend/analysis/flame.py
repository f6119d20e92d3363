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
"""
from __future__ import annotations

from typing import Iterable, Sequence

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
        for f in (reversed(frames) if invert else frames):
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


def build_tree(rows: Rows, *, invert: bool = False, filter: str | None = None,
               min_fraction: float = 1 / 3840) -> dict:
    root: dict = {}
    total = _trie(rows, 1, root, invert, filter)
    return {"name": "all", "value": total, "children": _emit(root, min_fraction * total, False)}


def diff_trees(a_rows: Rows, b_rows: Rows, *, invert: bool = False, filter: str | None = None,
               min_fraction: float = 1 / 3840) -> dict:
    root: dict = {}
    total_a = _trie(a_rows, 0, root, invert, filter)
    total_b = _trie(b_rows, 1, root, invert, filter)
    return {"name": "all", "value": total_b, "delta": total_b - total_a,
            "children": _emit(root, min_fraction * max(total_a, total_b), True)}
