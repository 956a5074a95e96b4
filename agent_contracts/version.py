"""agentshape's version: the one place it is written.

The build reads it (pyproject's ``[tool.hatch.version]``), and every layer shows it from here
(``agentshape.__version__``, ``agentshape --version``, the MCP server's ``serverInfo``), so
what runs says what it is even where the installed metadata is another version's (an
editable install not reinstalled since a bump).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
