"""Stallscope's server: the DuckDB store, the analyses derived at ingest and read by the API."""

import parsers  # noqa: F401  first: it keeps numpy's BLAS to one thread before pyarrow or duckdb import numpy
