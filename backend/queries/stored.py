"""The answers of an analysis page's first requests, stored in the analysis' database (`first_views`) beside being
kept in memory (memo.py).

Why: those answers depend only on the analysis' rows and its clock offsets, yet computing them takes seconds for
millions of events (the heatmap's index 2.0 s, the flame graph 1.8 s, the capabilities' counts several seconds on
18 M events): after a server start, the first load of each tab computed them, on 2 cores, beside the warm-up
computing the same. So an ingest computes them once it has committed (derive/first_views.py), and a read finds
them in the table: the page's first requests after a start read bytes.

A view is named by its key: what it is and its parameters, then, for an answer that holds aligned times or depends
on the chains (`timed`), the analysis' clock offsets (memo.offsets) as they were when it was computed; it is the key
memo.py keeps the answer under. `get` looks for the answer in memory, then in the table, then computes it (a file
written before the table existed, an analysis whose offsets changed since): every way gives the same bytes. The
table is written only inside `writing()` (the ingest's derive step, the warm-up): a request never writes. Given a
list, `writing(pending)` defers the writes: `store_pending` then stores them in one transaction (the ingest computes
its views on several cursors at once, and one commit costs less than one per view).

When a source's clock offset changes, its analysis' timed views are deleted (`drop_timed`, in the PATCH's
transaction) and the warm-up stores them again; a DELETE deletes its rows with every table keyed by analysis_id.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from typing import Callable

from . import memo
from .run import run

# within writing(): True (store at once) or the list of answers to store (writing(pending))
_writing: contextvars.ContextVar[bool | list] = contextvars.ContextVar("stallscope_first_views_writing", default=False)


@contextlib.contextmanager
def writing(pending: list | None = None):
    """Within it (in this thread), the answers `get` returns are also stored in the table where they are not yet: at
    once, or, given a list, appended to it for `store_pending` (which may be called from another thread)."""
    token = _writing.set(True if pending is None else pending)
    try:
        yield
    finally:
        _writing.reset(token)


def is_writing() -> bool:
    """Whether this thread stores the answers (within `writing()`)."""
    return _writing.get() is not False


def _key_text(key: tuple) -> str:
    return json.dumps(key[1:], separators=(",", ":"))


def get(con, analysis_id: str, what: str, params: tuple, compute: Callable[[], object], timed: bool, raw=False):
    """compute()'s answer for (what, params) of the analysis, kept in memory and found in the table when stored.
    compute() returns a JSON-like value (a fresh copy is returned each time), or bytes when raw (returned as kept:
    read them only)."""
    key = (analysis_id, what, *params) + ((memo.offsets(con, analysis_id),) if timed else ())
    text = _key_text(key)

    def load():
        found = run(con, "SELECT body FROM first_views WHERE analysis_id = ? AND key = ?", [analysis_id, text])
        if found:
            body = bytes(found[0][0])
            return body if raw else body.decode()
        value = compute()
        return value if raw else json.dumps(value)

    body = memo.shared(key, load)
    w = _writing.get()
    if isinstance(w, list):
        w.append((analysis_id, key, text, timed, body))
    elif w:
        _store(con, analysis_id, key, text, timed, body)
    return body if raw else json.loads(body)


def store_pending(con, pending: list) -> None:
    """Stores the answers appended within `writing(pending)`, in one transaction (as `get` would have, each)."""
    con.begin()
    try:
        for item in pending:
            _store(con, *item)
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _store(con, analysis_id: str, key: tuple, text: str, timed: bool, body: str | bytes) -> None:
    """Stores the answer unless it is there already, the analysis is gone, or its offsets moved since it was
    computed."""
    if timed and memo.offsets(con, analysis_id) != key[-1]:
        return
    con.execute(
        "INSERT INTO first_views (analysis_id, key, timed, body) SELECT $aid, $key, $timed, $body"
        " WHERE EXISTS (SELECT 1 FROM analyses WHERE id = $aid)"
        " AND NOT EXISTS (SELECT 1 FROM first_views WHERE analysis_id = $aid AND key = $key)",
        {"aid": analysis_id, "key": text, "timed": timed, "body": body.encode() if isinstance(body, str) else body},
    )


def drop_timed(con, analysis_id: str) -> None:
    """Deletes the analysis' views that depend on its clock offsets (a source's offset changed)."""
    con.execute("DELETE FROM first_views WHERE analysis_id = ? AND timed", [analysis_id])


def discard_orphans(con) -> None:
    """Deletes the views of analyses that no longer exist (stored by a warm-up while their analysis was deleted)."""
    con.execute("DELETE FROM first_views WHERE analysis_id NOT IN (SELECT id FROM analyses)")
