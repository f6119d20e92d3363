"""Analysis ids: unguessable, URL-safe, and never read as a command-line option."""

from __future__ import annotations

from backend.ingest.pipeline import new_id


def test_an_id_never_starts_like_an_option():
    ids = [new_id() for _ in range(4000)]  # a token_urlsafe starts with '-' or '_' once in 32 draws
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 22 and i[0].isalnum() for i in ids)
    assert all(set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)
