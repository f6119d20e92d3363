"""A bounded store of computed values: least recently used dropped first, and one computation per key at a time."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable


class Lru:
    """Values by key, at most `max_bytes` in all (and `max_items`), each value's size given by `size(value)`.
    `get` computes a missing key's value once: concurrent callers of that key wait for that one computation."""

    def __init__(self, max_bytes: int, max_items: int | None = None):
        self.max_bytes, self.max_items = max_bytes, max_items
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()  # key -> (value, bytes)
        self._bytes = 0
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, compute: Callable[[], object], size: Callable[[object], int]) -> object:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]
            pending = self._computing.setdefault(key, threading.Lock())
        with pending:
            with self._lock:
                hit = self._items.get(key)
            if hit is not None:
                return hit[0]
            try:
                value = compute()
                nbytes = size(value)
            except BaseException:
                with self._lock:  # nothing kept, nor the key's lock (a computation that raised may be asked again)
                    self._computing.pop(key, None)
                raise
            with self._lock:
                self._computing.pop(key, None)
                if key not in self._items:
                    self._items[key] = (value, nbytes)
                    self._bytes += nbytes
                self._trim()
            return value

    def _trim(self) -> None:
        while len(self._items) > 1 and (
            self._bytes > self.max_bytes or (self.max_items is not None and len(self._items) > self.max_items)
        ):
            self._bytes -= self._items.popitem(last=False)[1][1]

    def kept(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def used(self) -> float:
        """The share of max_bytes in use."""
        return self._bytes / self.max_bytes

    def used_bytes(self) -> int:
        return self._bytes

    def keys(self) -> list:
        """The kept keys, least recently used first (a snapshot)."""
        with self._lock:
            return list(self._items)

    def count(self, match: Callable[[Hashable], bool]) -> int:
        """How many kept values have a key `match` says."""
        with self._lock:
            return sum(1 for k in self._items if match(k))

    def forget(self, drop: Callable[[Hashable], bool]) -> None:
        """Drops the values whose key `drop` says."""
        with self._lock:
            for key in [k for k in self._items if drop(k)]:
                self._bytes -= self._items.pop(key)[1]
