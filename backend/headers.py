"""Security headers on every response: what the browser may run, load, frame and send along.

The app's own page is built by Vite into scripts and styles served from /assets: no inline script, so the
Content-Security-Policy allows scripts from this origin only. ECharts' tooltips set inline `style`
attributes, hence `'unsafe-inline'` for styles alone. FastAPI's /docs and /redoc pages load Swagger/ReDoc
from a CDN with an inline script; they show no trace data and get the other headers but no CSP.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
ALWAYS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
NO_CSP_PATHS = ("/docs", "/redoc")


class SecurityHeaders:
    """ASGI middleware (pure: it never reads or buffers bodies, so streamed uploads and responses pass as they are)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = list(ALWAYS)
        if not scope.get("path", "").startswith(NO_CSP_PATHS):
            extra.append((b"content-security-policy", CSP.encode()))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *((k, v) for k, v in extra if k not in names)]
            await send(message)

        await self.app(scope, receive, send_with_headers)
