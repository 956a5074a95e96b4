"""The service layer both fronts call: the HTTP API (``api/``) and the MCP server.

Neither front imports the other; what they share lives here.
"""

from __future__ import annotations

from agent_coordinator.service.lifespan import serving
from agent_coordinator.service.runs import submit_run, wait_for_end

__all__ = ["serving", "submit_run", "wait_for_end"]
