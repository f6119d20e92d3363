"""Ingest: files in, one analysis out. pipeline.py runs the stages (read it top to bottom); files.py (inputs,
progress, detection), streams.py (staging), hashes.py, memory.py."""

from __future__ import annotations

from .files import IngestError, InputFile, Progress
from .pipeline import ingest

__all__ = ["IngestError", "InputFile", "Progress", "ingest"]
