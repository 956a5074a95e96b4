"""The dashboard: web pages over the service's own HTTP API, served by ``agentshape serve``.

Every page is the same small HTML shell plus vanilla JavaScript and CSS shipped in this package
(no CDN, no build step); the scripts read and change everything through the JSON API, with the
bearer token the user gave once. :class:`DashboardPages` serves the shell at the page addresses
(``/``, ``/agents``, ``/agents/{name}``, ``/sessions``, ``/sessions/{id}``, ``/runs/new``,
``/schemas``, ``/analytics``) to requests that ask for HTML, and the assets under
``/dashboard/assets/``; every other request goes on to the API unchanged.
"""

from __future__ import annotations

from agent_coordinator._dashboard.pages import ASSETS_PATH, DashboardPages, is_page

__all__ = ["ASSETS_PATH", "DashboardPages", "is_page"]
