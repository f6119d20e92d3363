"""Dependencies of the routes, as named Annotated aliases."""
from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from typing import Annotated, Iterator

import duckdb
from fastapi import Depends, Request

from ..store import Progress, Store


def get_store(request: Request) -> Store:
    return request.app.state.store


def get_cursor(request: Request) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own for each request: DuckDB connections are not shared across threads."""
    con = request.app.state.store.cursor()
    try:
        yield con
    finally:
        con.close()


class Board:
    """Progress of the uploads in flight, by the token the client chose (bounded: oldest forgotten)."""

    def __init__(self, keep: int = 256):
        self._items: OrderedDict[str, Progress] = OrderedDict()
        self._lock = threading.Lock()
        self._keep = keep

    def start(self, token: str | None) -> Progress:
        prog = Progress()
        with self._lock:
            self._items[token or secrets.token_urlsafe(8)] = prog
            while len(self._items) > self._keep:
                self._items.popitem(last=False)
        return prog

    def get(self, token: str) -> Progress | None:
        with self._lock:
            return self._items.get(token)


def get_board(request: Request) -> Board:
    return request.app.state.progress


Cursor = Annotated[duckdb.DuckDBPyConnection, Depends(get_cursor)]
ProgressBoard = Annotated[Board, Depends(get_board)]
