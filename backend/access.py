"""Who may do what: the access model of a server that a team shares (docs/SECURITY.md).

* Always on, locally too: the Host header must name this server (STALLSCOPE_ALLOWED_HOSTS; by default the local
  names), so that a page served under another name that resolves to 127.0.0.1 (DNS rebinding) reads nothing; and a
  state-changing request (any method but GET/HEAD/OPTIONS) sent by a browser must come from this server's own origin
  (its Origin header names the host it was sent to, or an origin of STALLSCOPE_ALLOWED_ORIGINS), so that a page on
  another origin cannot post uploads or edits from a visitor's browser.
* With STALLSCOPE_TOKEN set (a shared server): listing every analysis and uploading need the token (header
  `Authorization: Bearer <token>`); changing or deleting an analysis needs the token or the analysis' edit key
  (header `X-Edit-Key`, returned once when the analysis is created). Reading an analysis needs only its link: ids
  are 128 random bits (capability URLs).
* Without it (`make run` on a laptop), the same routes are open to whoever reaches the server.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from .db import execute

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
TOKEN_HEADER = "Authorization"
EDIT_KEY_HEADER = "X-Edit-Key"


@dataclass(frozen=True)
class Access:
    """The access settings of a running app."""

    token: str | None = None
    allowed_hosts: tuple[str, ...] = LOCAL_NAMES  # host names (no port), lower case; "*": any
    allowed_origins: tuple[str, ...] = ()  # full origins (scheme://host[:port]) allowed besides the server's own

    @classmethod
    def from_env(cls, listen_host: str = "127.0.0.1", env: dict | None = None) -> "Access":
        """STALLSCOPE_TOKEN, STALLSCOPE_ALLOWED_HOSTS (comma-separated names; default: the local names, plus the
        address listened on when it is a specific one), STALLSCOPE_ALLOWED_ORIGINS (comma-separated)."""
        env = os.environ if env is None else env
        token = env.get("STALLSCOPE_TOKEN") or None
        if token is not None and len(token) < 16:
            raise ValueError("STALLSCOPE_TOKEN must be at least 16 characters (e.g. `openssl rand -hex 24`)")
        named = _names(env.get("STALLSCOPE_ALLOWED_HOSTS", ""))
        if named:
            hosts = named
        else:
            hosts = list(LOCAL_NAMES)
            if listen_host and not _wildcard(listen_host):
                hosts.append(listen_host.strip("[]").lower())
        origins = tuple(o.rstrip("/").lower() for o in _names(env.get("STALLSCOPE_ALLOWED_ORIGINS", "")))
        return cls(token=token, allowed_hosts=tuple(dict.fromkeys(hosts)), allowed_origins=origins)

    @property
    def shared(self) -> bool:
        """A token is set: the server is shared, listing, uploading and changing need it."""
        return self.token is not None

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        name = _hostname(host_header or "")
        return bool(name) and name in self.allowed_hosts

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        """A browser's Origin for a state-changing request: this server's own (the host it was sent to), or listed."""
        origin = origin.strip().lower().rstrip("/")
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query:
            return False  # "null" (sandboxed frames, file: pages) and anything malformed
        return parts.netloc == (host_header or "").strip().lower()

    def token_ok(self, authorization: str | None) -> bool:
        """The header `Authorization: Bearer <token>` names this server's token (compared in constant time)."""
        if self.token is None or not authorization:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())


def _names(value: str) -> list[str]:
    return [n.strip().lower() for n in value.split(",") if n.strip()]


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _hostname(host_header: str) -> str:
    """The name of a Host header without its port: `example.com:8000` -> `example.com`, `[::1]:8000` -> `::1`."""
    h = host_header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return h[1:end] if end > 0 else ""
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def new_edit_key() -> str:
    """An analysis' edit key: 128 random bits, URL-safe. Only its SHA-256 is kept."""
    return secrets.token_urlsafe(16)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def keep_edit_key(con, analysis_id: str, key: str) -> None:
    execute(
        con, "INSERT OR REPLACE INTO edit_keys (analysis_id, key_sha256) VALUES (?, ?)", [analysis_id, key_digest(key)]
    )


def edit_key_ok(con, analysis_id: str, key: str | None) -> bool:
    if not key or len(key) > 256:
        return False
    rows = execute(con, "SELECT key_sha256 FROM edit_keys WHERE analysis_id = ?", [analysis_id]).fetchall()
    return bool(rows) and hmac.compare_digest(rows[0][0], key_digest(key))


class HostAndOrigin:
    """ASGI middleware: refuses a request whose Host is not this server's (400), and a state-changing request whose
    Origin is another site's (403). Requests without an Origin header (curl, the CLI, scripts) are not from a
    browser page and pass the Origin check. Pure ASGI: bodies are never read or buffered."""

    def __init__(self, app: ASGIApp, access: Access):
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {}
        for k, v in scope.get("headers", ()):
            headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
        host = headers.get("host")
        if not self.access.host_allowed(host):
            await _refuse(
                send,
                400,
                f"this server does not answer to the host name {host!r}: add it to "
                "STALLSCOPE_ALLOWED_HOSTS if it is this server's",
            )
            return
        origin = headers.get("origin")
        if scope.get("method", "GET") not in SAFE_METHODS:
            if origin is not None and not self.access.origin_allowed(origin, host):
                await _refuse(send, 403, f"a page of another origin ({origin[:100]!r}) may not change anything here")
                return
            if origin is None and headers.get("sec-fetch-site") == "cross-site":
                await _refuse(send, 403, "a page of another site may not change anything here")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
