"""Keyset paging of the list reads (requests, waits, calls): an opaque cursor holds the last row's sort key and its
unique id, and the next page is the rows strictly after it in the same ORDER BY, so pages never repeat or skip a row
whatever the sort and filters (rows never change after ingest; a PATCHed clock offset moves every time alike).

A cursor is URL-safe base64 of a JSON array [VERSION, list, fingerprint, key...]: `list` names the route, the
fingerprint is a hash of the analysis and every parameter that chose the rows or their order (and, where the order
is by a time on the analysis timeline, the sources' clock offsets), so a cursor given to another list, analysis, sort
or filter, or kept across a PATCHed offset, is refused (`BadCursor`) instead of answering rows of another list.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

VERSION = 1
INT64 = (1 << 63) - 1
MAX_CURSOR_CHARS = 512


class BadCursor(ValueError):
    """A cursor that this list did not make: the message says why, for a 422."""


@dataclass(frozen=True)
class SortKey:
    """One column of an ORDER BY: its SQL expression, direction and where NULLs go (said explicitly, so that the
    keyset condition and the ORDER BY agree)."""

    expr: str
    desc: bool = False
    nulls_last: bool = True
    nullable: bool = True

    def order_sql(self) -> str:
        return f"{self.expr} {'DESC' if self.desc else 'ASC'} NULLS {'LAST' if self.nulls_last else 'FIRST'}"


def order_by(keys: list[SortKey]) -> str:
    return ", ".join(k.order_sql() for k in keys)


def _fingerprint(list_name: str, analysis_id: str, params: dict) -> str:
    text = json.dumps([list_name, analysis_id, params], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def encode(list_name: str, analysis_id: str, params: dict, key: list) -> str:
    body = json.dumps([VERSION, list_name, _fingerprint(list_name, analysis_id, params), *key], separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def decode(cursor: str, list_name: str, analysis_id: str, params: dict, width: int) -> list:
    """The key a cursor of this list holds (`width` values: ints or nulls), else BadCursor saying what is wrong."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise BadCursor(f"this cursor is not one of /{list_name}: longer than {MAX_CURSOR_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw.decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadCursor(f"malformed cursor: pass the next_cursor of a page of /{list_name} unchanged") from None
    if not isinstance(body, list) or len(body) < 3 or body[0] != VERSION:
        raise BadCursor(f"malformed cursor: pass the next_cursor of a page of /{list_name} unchanged")
    if body[1] != list_name:
        raise BadCursor(f"this cursor is one of /{body[1]}, not of /{list_name}")
    if body[2] != _fingerprint(list_name, analysis_id, params):
        raise BadCursor(
            f"this cursor was made for another analysis, sort or filter of /{list_name}, or before a source's"
            " clock offset changed: ask again with the parameters of the page that gave it, or start over without"
            " a cursor"
        )
    key = body[3:]
    if len(key) != width or not all(
        v is None or (isinstance(v, int) and not isinstance(v, bool) and -INT64 <= v <= INT64) for v in key
    ):
        raise BadCursor(f"malformed cursor: pass the next_cursor of a page of /{list_name} unchanged")
    return key


def after(keys: list[SortKey], values: list, prefix: str = "k") -> tuple[str, dict]:
    """A condition true for the rows strictly after `values` in the order `keys` (lexicographic, NULLs where the
    ORDER BY puts them), and its bound parameters."""
    params: dict = {}
    alternatives = []
    equal: list[str] = []
    for i, (k, v) in enumerate(zip(keys, values)):
        name = f"{prefix}{i}"
        if v is None:
            if not k.nullable:
                raise BadCursor("malformed cursor: a key that is never null is null")
            beyond = "FALSE" if k.nulls_last else f"{k.expr} IS NOT NULL"
            same = f"{k.expr} IS NULL"
        else:
            params[name] = v
            beyond = f"{k.expr} {'<' if k.desc else '>'} ${name}"
            if k.nullable and k.nulls_last:
                beyond = f"({beyond} OR {k.expr} IS NULL)"
            same = f"{k.expr} = ${name}"
        if beyond != "FALSE":
            alternatives.append(" AND ".join([*equal, beyond]))
        equal.append(same)
    if not alternatives:
        return "FALSE", params
    return "(" + " OR ".join(f"({a})" for a in alternatives) + ")", params


def page(rows: list[dict], limit: int, key_of, list_name: str, analysis_id: str, params: dict) -> dict:
    """{items, next_cursor} from up to limit + 1 rows read in order: a next cursor only when there are more."""
    more = len(rows) > limit
    items = rows[:limit]
    cursor = encode(list_name, analysis_id, params, key_of(items[-1])) if more and items else None
    return {"items": items, "next_cursor": cursor}
