"""The service layer both fronts call: the HTTP API (``api/``) and the MCP server.

Neither front imports the other; what they share lives here: the :class:`Services` a server
runs on, the request and response bodies, the ``Host`` checks, submitting and waiting on runs,
checking a schema, and the server's lifespan.
"""

from __future__ import annotations

from agent_coordinator._service.hosts import AllowedHosts
from agent_coordinator._service.lifespan import serving
from agent_coordinator._service.runs import submit_run, wait_for_end
from agent_coordinator._service.services import Limits, Services

__all__ = ["AllowedHosts", "Limits", "Services", "serving", "submit_run", "wait_for_end"]
