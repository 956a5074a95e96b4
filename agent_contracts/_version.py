"""agentshape's version: the one place it is written.

The build reads it (pyproject's ``[tool.hatch.version]``) and every layer shows it from here, so
what runs says what it is even when the installed metadata is stale (an editable install).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
