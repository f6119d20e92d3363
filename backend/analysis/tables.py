"""store.py's import of the table rebuild helpers, which live in backend/schema/migrations.py."""

from ..schema.migrations import rebuild, stored_columns

__all__ = ["rebuild", "stored_columns"]
