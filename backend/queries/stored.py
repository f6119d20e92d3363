"""The answers of an analysis page's first requests: found in memory (the AnalysisCache's answers), in the analysis'
database (table `first_views`, stored by `precompute`: queries/first_views.py), or computed.

Why: those answers depend only on the analysis' rows and its clock offsets, yet computing them takes seconds for
millions of events (the heatmap's index 2.0 s, the flame graph 1.8 s, the capabilities' counts several seconds on
18 M events): after a server start, the first load of each tab computed them, on 2 cores, beside the warm-up
computing the same. So they are computed once the ingest has committed and stored, and a read finds them in the
table: the page's first requests after a start read bytes.

A view is named by its key: what it is and its parameters, then, for an answer that holds aligned times or depends
on the chains (`timed`), the analysis' clock offsets (queries/catalogue.py) as they were when it was computed; it is
the key the cache keeps the answer under. `get` looks for the answer in memory, then in the table, then computes it
(a file written before the table existed, an analysis whose offsets changed since): every way gives the same bytes.
A read never writes: through a RecordingCache (a precompute's), `get` also records the answer, and precompute stores
what was recorded (`store`), in one transaction.

When a source's clock offset changes, its analysis' timed views are deleted (`drop_timed`, in the PATCH's
transaction) and computed again (first_views.precompute); a DELETE deletes its rows with every table keyed by
analysis_id.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

from ..db import execute
from .catalogue import offsets, offsets_now
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache


def _key_text(key: tuple) -> str:
    return json.dumps(key[1:], separators=(",", ":"))


def get(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    what: str,
    params: tuple,
    compute: Callable[[], object],
    timed: bool,
    raw=False,
):
    """compute()'s answer for (what, params) of the analysis, kept in the cache and found in the table when stored.
    compute() returns a JSON-like value (a fresh copy is returned each time), or bytes when raw (returned as kept:
    read them only)."""
    key = (analysis_id, what, *params) + ((offsets(con, cache, analysis_id),) if timed else ())
    text = _key_text(key)

    def load():
        found = run(con, "SELECT body FROM first_views WHERE analysis_id = ? AND key = ?", [analysis_id, text])
        if found:
            body = bytes(found[0][0])
            return body if raw else body.decode()
        value = compute()
        return value if raw else json.dumps(value)

    body = cache.shared(key, load)
    if cache.recorded is not None:
        cache.recorded.append((analysis_id, key, text, timed, body))
    return body if raw else json.loads(body)


def store(con, recorded: list) -> None:
    """Stores the answers a RecordingCache recorded, in one transaction: each unless it is there already, its analysis
    is gone, or its offsets moved since it was computed."""
    con.begin()
    try:
        for analysis_id, key, text, timed, body in recorded:
            if timed and offsets_now(con, analysis_id) != key[-1]:
                continue
            execute(
                con,
                "INSERT INTO first_views (analysis_id, key, timed, body) SELECT $aid, $key, $timed, $body"
                " WHERE EXISTS (SELECT 1 FROM analyses WHERE id = $aid)"
                " AND NOT EXISTS (SELECT 1 FROM first_views WHERE analysis_id = $aid AND key = $key)",
                {
                    "aid": analysis_id,
                    "key": text,
                    "timed": timed,
                    "body": body.encode() if isinstance(body, str) else body,
                },
            )
        con.commit()
    except BaseException:
        con.rollback()
        raise


def drop_timed(con, analysis_id: str) -> None:
    """Deletes the analysis' views that depend on its clock offsets (a source's offset changed)."""
    execute(con, "DELETE FROM first_views WHERE analysis_id = ? AND timed", [analysis_id])


def discard_orphans(con) -> None:
    """Deletes the views of analyses that no longer exist (stored by a warm-up while their analysis was deleted)."""
    execute(con, "DELETE FROM first_views WHERE analysis_id NOT IN (SELECT id FROM analyses)")
