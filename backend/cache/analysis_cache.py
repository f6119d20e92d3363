"""What the server remembers of each analysis while it runs, and the one way it forgets it.

An analysis' rows never change after its ingest, except its chains and clock offsets (a PATCH) and its deletion
(DELETE, the retention). So what is computed from them is kept, in four places, all held here:

* `answers`: results of queries (JSON-like, a copy returned each time: `get`) and lookup structures (the same object
  each time, read only: `shared`), keyed by (analysis id, what, parameters...). An answer holding aligned times or
  chains includes the clock offsets in its key (queries/catalogue.py), so a PATCH makes new keys.
* `indexes`: the heatmaps' in-memory event indexes and grid summaries (queries/heatindex.py, heatsummary.py).
* `bodies`: response bodies of GET /api/analyses/<id>/..., sent again while the analysis' generation holds
  (bodies.py).
* the first views: the answers of an analysis page's first requests, stored in the database (table `first_views`)
  by queries/first_views.precompute, read into `answers` by queries/stored.py.

`forget(id)` drops all of them for the analysis and moves it to a new generation (a read under way when it is
called is never kept): PATCH, DELETE and the retention call it. The first views are computed and stored by
queries/first_views.precompute through a `recording()` of this cache: after an upload, after a PATCH (its timed
views were deleted), and by the warm-up for the newest analyses after a start (a new process remembers nothing).
Reads never write: a read finds a first view in memory, in the table, or computes it; only that precompute stores.
This module imports nothing of the queries: they take the cache as an argument.

One per app (`app.state.cache`, backend/app.py); the CLI and the tests make their own.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Callable, Hashable

from .bodies import Bodies
from .lru import Lru

ANSWER_BYTES = 256 << 20  # flame graphs are up to ~1 MB of JSON each, one per set of parameters
ANSWER_ITEMS = 1024
INDEX_BYTES = int(os.environ.get("STALLSCOPE_HEATMAP_CACHE_MB", "512")) << 20
BODY_BYTES = 128 << 20
MAX_BODY = 4 << 20


def _text_size(value) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 0


class AnalysisCache:
    def __init__(
        self,
        answer_bytes: int = ANSWER_BYTES,
        index_bytes: int = INDEX_BYTES,
        body_bytes: int = BODY_BYTES,
        max_body: int = MAX_BODY,
    ):
        self.answers = Lru(answer_bytes, ANSWER_ITEMS)
        self.indexes = Lru(index_bytes)
        self.bodies = Bodies(body_bytes, max_body)
        self._lock = threading.Lock()
        self._generations: dict[str, int] = {}  # analysis id -> how many times it was forgotten
        self._epoch = 0  # how many times everything was forgotten
        # the first views read through this cache, to be stored (a precompute's RecordingCache: a list)
        self.recorded: list | None = None
        # computing answers to store, not for a request: a whole heatmap binned in SQL, the timeline's summaries read
        # level by level, rather than building what a request's zooms would read next (a RecordingCache: True)
        self.storing = False

    # ---- answers -----------------------------------------------------------------------------------------------

    def get(self, key: tuple, compute: Callable[[], object]):
        """compute()'s JSON-like result for key (its first element the analysis id): computed once, a copy each
        time."""
        return json.loads(self.answers.get(key, lambda: json.dumps(compute()), _text_size))

    def shared(self, key: tuple, compute: Callable[[], object], size: Callable[[object], int] | None = None):
        """compute()'s result for key, computed once; the same object each time (read it only). Its size counts
        towards the budget: len() of str or bytes, else size(result) when given."""
        return self.answers.get(key, compute, lambda v: _text_size(v) or (size(v) if size else 0))

    def kept(self, key: Hashable) -> bool:
        return self.answers.kept(key)

    # ---- heatmap indexes ---------------------------------------------------------------------------------------

    def index(self, key: tuple, build: Callable[[], object]):
        """The index (anything with nbytes) of key (analysis id, metric, ...), built once."""
        return self.indexes.get(key, build, lambda idx: idx.nbytes)

    def index_kept(self, key: tuple) -> bool:
        return self.indexes.kept(key)

    def used(self) -> float:
        """The fuller share of the answers' and the indexes' budgets."""
        return max(self.answers.used(), self.indexes.used())

    def kept_of(self, analysis_id: str) -> dict[str, int]:
        """How many answers, indexes and bodies of the analysis are kept."""

        def mine(key) -> bool:
            return key[0] == analysis_id

        return {
            "answers": self.answers.count(mine),
            "indexes": self.indexes.count(mine),
            "bodies": self.bodies.count(analysis_id),
        }

    # ---- forgetting ----------------------------------------------------------------------------------------------

    def generation(self, analysis_id: str) -> tuple[int, int]:
        """Changes each time the analysis (or everything) is forgotten: a body computed under one generation is of
        the analysis' rows as they were then."""
        with self._lock:
            return self._epoch, self._generations.get(analysis_id, 0)

    def forget(self, analysis_id: str | None = None) -> None:
        """Drops everything kept of the analysis (None: of every analysis): answers, indexes, bodies."""
        with self._lock:
            if analysis_id is None:
                self._epoch += 1
            else:
                self._generations[analysis_id] = self._generations.get(analysis_id, 0) + 1

        def drop(key) -> bool:
            return analysis_id is None or key[0] == analysis_id

        self.answers.forget(drop)
        self.indexes.forget(drop)
        self.bodies.forget(analysis_id)

    # ---- first views (queries/first_views.precompute) ----------------------------------------------------------

    def recording(self) -> RecordingCache:
        """This cache, also recording each first view a query computes or reads (for precompute to store)."""
        return RecordingCache(self)


class RecordingCache(AnalysisCache):
    """An AnalysisCache's own stores seen through a view that records the first views read through it (`recorded`):
    the queries answer as with the cache itself; precompute then stores what was recorded."""

    def __init__(self, cache: AnalysisCache):
        self.answers, self.indexes, self.bodies = cache.answers, cache.indexes, cache.bodies
        self._cache = cache
        self._lock = cache._lock
        self.recorded = []
        self.storing = True

    def generation(self, analysis_id: str) -> tuple[int, int]:
        return self._cache.generation(analysis_id)

    def forget(self, analysis_id: str | None = None) -> None:
        self._cache.forget(analysis_id)
