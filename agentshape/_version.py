"""The installed agentshape's version (written in :mod:`agent_contracts._version`)."""

from __future__ import annotations

from agent_contracts._version import __version__

__all__ = ["__version__"]
