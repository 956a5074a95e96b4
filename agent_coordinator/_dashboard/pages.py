"""Which requests get a dashboard page or asset, decided before the API sees them.

Some page addresses are also API paths (``/agents``, ``/sessions``, ``/schemas``...): a ``GET``
whose ``Accept`` header asks for ``text/html`` (what a browser sends when it opens a page) gets
the page; any other request (``curl``, httpx, ``fetch`` asking for JSON) gets the API's JSON as
before. The shell holds no data, so it needs no token; the data it shows comes from the API,
which does.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ASSETS_PATH", "DashboardPages", "is_page"]

ASSETS_PATH = "/dashboard/assets/"
"""Where the scripts and styles are served."""

_PAGES = re.compile(
    r"/(?:agents(?:/[^/]+)?|sessions(?:/[^/]+)?|runs/new|schemas|batches|analytics|evals)?/?\Z"
)
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_SECURITY = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def is_page(path: str) -> bool:
    """Tell whether ``path`` is a dashboard page's address."""
    return _PAGES.match(path) is not None


def _assets(folder: Traversable, prefix: str = "") -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for entry in folder.iterdir():
        name = prefix + entry.name
        if entry.is_dir():
            found.update(_assets(entry, name + "/"))
        elif any(name.endswith(suffix) for suffix in _TYPES):
            found[name] = entry
    return found


class DashboardPages:
    """ASGI middleware: the shell for HTML page requests, the assets, else the API.

    Args:
        app: The API application.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        static = resources.files("agent_coordinator._dashboard").joinpath("static")
        self._assets = _assets(static)

    def _file(self, name: str, *, head: bool) -> Response:
        entry = self._assets[name]
        kind = _TYPES[name[name.rindex(".") :]]
        body = b"" if head else entry.read_bytes()
        headers = dict(_SECURITY)
        if head:
            headers["content-length"] = str(len(entry.read_bytes()))
        return Response(body, media_type=kind, headers=headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a page or asset request; pass everything else to the API."""
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            path: str = scope["path"]
            head = scope["method"] == "HEAD"
            if path.startswith(ASSETS_PATH):
                name = path.removeprefix(ASSETS_PATH)
                response = (
                    self._file(name, head=head)
                    if name in self._assets and name != "index.html"
                    else Response("no such dashboard asset", status_code=404)
                )
                await response(scope, receive, send)
                return
            if is_page(path) and "text/html" in Headers(scope=scope).get("accept", ""):
                await self._file("index.html", head=head)(scope, receive, send)
                return
        await self.app(scope, receive, send)
