"""Every table and view of the database, and its version: tables.py (definitions), migrations.py (ordered steps
from any older file to SCHEMA_VERSION)."""

from __future__ import annotations

from .migrations import SCHEMA_VERSION, migrate, rebuild, stored_columns
from .tables import SCHEMA, STAGED_TABLES

__all__ = ["SCHEMA", "SCHEMA_VERSION", "STAGED_TABLES", "migrate", "rebuild", "stored_columns"]
