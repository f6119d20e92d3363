"""The names store.py imports, kept here while store.py is not yet split (see docs/ARCHITECTURE.md): the schema
is in backend/schema/, the derive steps in backend/derive/ (pipeline.py declares them), the reads in
backend/queries/."""

from __future__ import annotations

from ..derive.pipeline import DERIVE_ANALYSIS, DERIVE_SOURCE
from ..schema import SCHEMA, STAGED_TABLES, migrate

MIGRATIONS = [migrate]  # fn(con), run by store.py before SCHEMA: brings the file to schema.SCHEMA_VERSION

__all__ = ["DERIVE_ANALYSIS", "DERIVE_SOURCE", "MIGRATIONS", "SCHEMA", "STAGED_TABLES"]
