"""Which requests may reach the service: allowed ``Host`` names, and no cross-site state change.

A web page the user visits can be made same-origin with a local service by DNS rebinding (its
name re-pointed at 127.0.0.1); its requests then carry the page's name in ``Host``, which
:class:`HostGuard` refuses (421 ``HostNotAllowed``) unless the name is allowed. A page on another
origin can still send a ``<form method=post>`` without rebinding; the browser marks such a request
(``Sec-Fetch-Site``, ``Origin``), and a state-changing one is refused (403 ``CrossSiteRequest``).
Clients that are not browsers (curl, the SDKs, MCP clients) send no ``Origin`` and are unaffected.
The guard wraps the whole app, ``/mcp`` included.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_coordinator._errors import Forbidden, MisdirectedRequest, ServiceError

__all__ = ["LOOPBACK_NAMES", "AllowedHosts", "HostGuard"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""The names a service answers to by default."""

logger = logging.getLogger(__name__)

_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _host_port(host: str) -> tuple[str, str | None]:
    """Split a ``Host`` value (or an ``--allowed-host`` entry) into its lower-case name and port."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8600
        name, _, rest = host[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    if host.count(":") == 1:  # name:port (a bare IPv6 address has more than one colon)
        name, _, port = host.partition(":")
        return name.rstrip("."), port
    return host.rstrip("."), None


def _name(host: str) -> str:
    return _host_port(host)[0]


@dataclass(frozen=True)
class AllowedHosts:
    """The ``Host`` names a service answers to.

    Build it with :meth:`for_address`; the default (no arguments) is the loopback names.
    """

    names: frozenset[str] = frozenset(LOOPBACK_NAMES)
    """Allowed names, lower case, without a port."""
    declared: frozenset[str] = frozenset()
    """The names given with ``--allowed-host``: a page served under one of them (through a
    reverse proxy that rewrites ``Host``, say) is the service's own origin."""
    any_host: bool = False
    """Every ``Host`` is allowed (``--allowed-host '*'``)."""

    @classmethod
    def for_address(cls, address: str, extra: Iterable[str] = ()) -> AllowedHosts:
        """Return the names a service bound to ``address`` answers to.

        Args:
            address: The address it listens on; when it is a specific address (not ``0.0.0.0``
                or ``::``) it is allowed beside the loopback names.
            extra: Names given with ``--allowed-host`` (a port is ignored); ``*`` allows all.
        """
        names = set(LOOPBACK_NAMES)
        bound = _name(address)
        if bound and bound not in ("0.0.0.0", "::"):
            names.add(bound)
        declared = {_name(entry) for entry in extra if entry.strip() != "*"}
        any_host = any(entry.strip() == "*" for entry in extra)
        if any_host:
            logger.warning(
                "--allowed-host '*' answers every Host name, so a web page the user visits "
                "can reach this service through DNS rebinding"
            )
        return cls(
            names=frozenset(names | declared), declared=frozenset(declared), any_host=any_host
        )

    def allows(self, host: str | None) -> bool:
        """Tell whether a request with this ``Host`` header is answered."""
        if self.any_host:
            return True
        return host is not None and _name(host) in self.names

    def refusal(
        self,
        host: str | None,
        *,
        method: str | None,
        origin: str | None,
        fetch_site: str | None,
    ) -> ServiceError | None:
        """Return why a request is refused (421 or 403), or ``None`` when it is answered.

        Args:
            host: Its ``Host`` header (``None``: it has none).
            method: Its HTTP method (``None`` for a WebSocket).
            origin: Its ``Origin`` header, if any.
            fetch_site: Its ``Sec-Fetch-Site`` header, if any.

        Returns:
            ``MisdirectedRequest`` ``HostNotAllowed`` for a ``Host`` not allowed,
            ``Forbidden`` ``CrossSiteRequest`` for a browser's cross-site change, else ``None``.
        """
        if not self.allows(host):
            shown = _name(host) if host else ""
            return MisdirectedRequest(
                "HostNotAllowed",
                f"this service does not answer to the Host {host!r}; if that name is really "
                f"this service's, start it with --allowed-host {shown or 'NAME'}",
            )
        if method in _STATE_CHANGING and _is_cross_site(host, origin, fetch_site, self):
            return Forbidden(
                "CrossSiteRequest",
                "a web page on another site may not change this service's state "
                f"(Origin {origin!r}, Sec-Fetch-Site {fetch_site!r})",
            )
        return None

    def describe(self) -> str:
        """Return the allowed names for a banner: ``localhost, 127.0.0.1, ::1`` or ``any``."""
        if self.any_host:
            return "any (--allowed-host '*')"
        ordered = [n for n in LOOPBACK_NAMES if n in self.names]
        return ", ".join(ordered + sorted(self.names - set(LOOPBACK_NAMES)))


def _is_cross_site(
    host: str | None, origin: str | None, fetch_site: str | None, allowed: AllowedHosts
) -> bool:
    """Tell whether a browser marked the request as coming from a page on another origin."""
    if (fetch_site or "").lower() in ("cross-site", "same-site"):
        return True  # same-site is still another origin (another port or subdomain)
    if origin is None:
        return False  # not sent by a browser, or a same-origin GET
    parts = urlsplit(origin.strip().lower())
    try:
        origin_port = parts.port
    except ValueError:
        return True
    default = _DEFAULT_PORTS.get(parts.scheme)
    if default is None or not parts.hostname:
        return True  # "null" (a sandboxed frame, a file), or nothing a page of ours has
    if parts.hostname in allowed.declared:
        return False
    name, port = _host_port(host or "")
    return (name, port or default) != (parts.hostname, str(origin_port or default))


class HostGuard:
    """ASGI middleware answering 421 to a ``Host`` not allowed, 403 to a cross-site change.

    Args:
        app: The app to guard.
        allowed: The ``Host`` names answered.
    """

    def __init__(self, app: ASGIApp, *, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer it with the one error body."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        error = self.allowed.refusal(
            headers.get("host"),
            method=scope.get("method"),
            origin=headers.get("origin"),
            fetch_site=headers.get("sec-fetch-site"),
        )
        if error is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = error.body().model_dump(mode="json")
        await JSONResponse(body, status_code=error.status_code)(scope, receive, send)
