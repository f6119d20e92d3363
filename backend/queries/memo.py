"""Results that depend only on an analysis' rows, kept after their first computation (process-wide).

An analysis' rows never change after its ingest, except its chains (rebuilt when a clock offset is set), and
every time in them is its source's own (the clock offsets are read and added at each read). So a result that
holds no time, such as the dispatch summary of all the requests, can be computed on first use and kept; one that
holds aligned times or chains is kept under a key that includes the offsets (`offsets`), so that setting an
offset makes a new key (the PATCH route also forgets the analysis). Computing such results at ingest instead
would add their whole cost to every ingest (the dispatch summary: ~0.5 s for 2 M requests, ~10 % of a
blkparse ingest, measured on 10.5 M lines).

`get` keeps a result as JSON text and returns a fresh copy each time (the caller may change it); `shared` keeps
an object (a lookup structure) and returns that object itself: callers only read it. At most MAX_ITEMS and
about MAX_BYTES, the least recently used dropped first. Concurrent first calls of one key wait for one
computation.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Callable

from .run import run

MAX_ITEMS = 1024
MAX_BYTES = 256 << 20  # flame graphs are up to ~1 MB of JSON each, one per set of parameters

_items: OrderedDict[tuple, tuple[bool, object, int]] = OrderedDict()  # key -> (as JSON text, value, bytes)
_bytes = 0
_lock = threading.Lock()
_computing: dict[tuple, threading.Lock] = {}
_generations: dict[str, int] = {}  # analysis id -> how many times it was forgotten (a changed or deleted analysis)
_epoch = 0  # how many times everything was forgotten


def offsets(con, analysis_id: str) -> tuple[tuple[int, int], ...]:
    """The analysis' (source id, clock offset) pairs: part of the key of a result holding aligned times."""
    return tuple(run(con, "SELECT id, clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id", [analysis_id]))


def _get(key: tuple, compute: Callable[[], object], as_json: bool, size: Callable[[object], int] | None):
    global _bytes
    with _lock:
        hit = _items.get(key)
        if hit is not None:
            _items.move_to_end(key)
        else:
            pending = _computing.setdefault(key, threading.Lock())
    if hit is None:
        with pending:
            with _lock:
                hit = _items.get(key)
            if hit is None:
                value = compute()
                if as_json:
                    value = json.dumps(value)
                nbytes = len(value) if isinstance(value, (str, bytes)) else (size(value) if size else 0)
                hit = (as_json, value, nbytes)
                with _lock:
                    _computing.pop(key, None)
                    if key not in _items:
                        _items[key] = hit
                        _bytes += nbytes
                    while len(_items) > 1 and (len(_items) > MAX_ITEMS or _bytes > MAX_BYTES):
                        _bytes -= _items.popitem(last=False)[1][2]
    return json.loads(hit[1]) if hit[0] else hit[1]


def get(key: tuple, compute: Callable[[], object]):
    """compute()'s result (JSON-like) for key, whose first element is the analysis id; computed once, a copy
    returned each time."""
    return _get(key, compute, True, None)


def shared(key: tuple, compute: Callable[[], object], size: Callable[[object], int] | None = None):
    """compute()'s result for key, computed once; the same object each time (read it only). Its size counts
    towards MAX_BYTES: len() of str or bytes, else size(result) when given."""
    return _get(key, compute, False, size)


def kept(key: tuple) -> bool:
    """Whether the result of `key` is kept."""
    with _lock:
        return key in _items


def used() -> float:
    """The share of MAX_BYTES in use."""
    return _bytes / MAX_BYTES


def generation(analysis_id: str) -> tuple[int, int]:
    """Changes each time the analysis (or everything) is forgotten: a result computed under one generation is of
    the analysis' rows as they were then (backend/readcache.py keeps response bodies under it)."""
    with _lock:
        return _epoch, _generations.get(analysis_id, 0)


def forget(analysis_id: str | None = None) -> None:
    """Drops what is kept of an analysis (all: None)."""
    global _bytes, _epoch
    with _lock:
        if analysis_id is None:
            _epoch += 1
        else:
            _generations[analysis_id] = _generations.get(analysis_id, 0) + 1
        for key in [k for k in _items if analysis_id is None or k[0] == analysis_id]:
            _bytes -= _items.pop(key)[2]
