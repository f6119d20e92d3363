"""A pytest plugin (pyproject.toml's addopts: -p tests.server_settings): every test's app runs as a local server with
no token, and answers TestClient's host name (testserver) besides the local ones. Tests of the access model and the
limits give their own settings (tests/test_access.py, tests/test_limits.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def local_server_settings(monkeypatch):
    monkeypatch.setenv("STALLSCOPE_ALLOWED_HOSTS", "testserver,localhost,127.0.0.1,::1")
    for name in (
        "STALLSCOPE_TOKEN",
        "STALLSCOPE_ALLOWED_ORIGINS",
        "STALLSCOPE_MAX_UPLOADS",
        "STALLSCOPE_SPOOL_LIMIT",
        "STALLSCOPE_BODY_TIMEOUT",
        "STALLSCOPE_HEADER_TIMEOUT",
        "STALLSCOPE_MAX_UPLOAD",
    ):
        monkeypatch.delenv(name, raising=False)
