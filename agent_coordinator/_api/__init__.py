"""The HTTP API: the app and its routers (runs, sessions, schemas, agents, the editor, reports).

The app itself is :func:`agent_coordinator._api.app.create_app`; importing this package does not
build it. What the routers and the MCP server share (the services, bodies, host checks, and
submitting and waiting on runs) is :mod:`agent_coordinator._service`.
"""

from __future__ import annotations

__all__: list[str] = []
