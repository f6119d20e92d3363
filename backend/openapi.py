"""Prints the API's OpenAPI document (the frontend's TypeScript types are generated from it)."""

import json
import tempfile
from pathlib import Path

from .app import create_app
from .store import Store

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(json.dumps(create_app(Store(Path(d) / "x.duckdb")).openapi(), indent=1, sort_keys=True))
