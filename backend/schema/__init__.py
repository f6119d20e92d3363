"""Every table and view of the database, and its version: tables.py (definitions), migrations.py (ordered steps
from any older file to SCHEMA_VERSION), create.py (what opening a file does, in order)."""

from __future__ import annotations

from .create import create_or_migrate
from .migrations import SCHEMA_VERSION, NewerSchema
from .tables import PARSER_TABLES, STAGED_TABLES

__all__ = ["PARSER_TABLES", "SCHEMA_VERSION", "STAGED_TABLES", "NewerSchema", "create_or_migrate"]
