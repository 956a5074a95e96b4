"""The HTTP API: the app, its routers (runs, sessions, schemas, agents) and their bodies."""

from __future__ import annotations

from agent_coordinator.api.app import create_app
from agent_coordinator.api.deps import Limits, Services
from agent_coordinator.api.hosts import AllowedHosts

__all__ = ["AllowedHosts", "Limits", "Services", "create_app"]
