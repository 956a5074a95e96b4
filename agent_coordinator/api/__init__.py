"""The HTTP API: the app, its routers (runs, sessions, schemas, agents) and their bodies.

The app itself is :func:`agent_coordinator.api.app.create_app`; importing this package does not
build it, so the MCP server can use the API's bodies and dependencies without loading the app
(which itself may mount the MCP server).
"""

from __future__ import annotations

from agent_coordinator.api.deps import Limits, Services
from agent_coordinator.api.hosts import AllowedHosts

__all__ = ["AllowedHosts", "Limits", "Services"]
