"""The service layer both fronts call: the HTTP API (``api/``) and the MCP server.

Neither front imports the other; what they share lives here.
"""

from __future__ import annotations

from agent_coordinator.service.lifespan import serving

__all__ = ["serving"]
