"""What the server remembers of each analysis, and how it forgets it: one AnalysisCache (analysis_cache.py) holding
query answers, heatmap indexes, response bodies (bodies.py) and the first views' reads, with `forget(id)`
(queries/first_views.precompute stores the first views through its `recording()`)."""

from .analysis_cache import AnalysisCache, RecordingCache
from .bodies import ResponseCache

__all__ = ["AnalysisCache", "RecordingCache", "ResponseCache"]
