"""The installed agentshape's version (the one place it is written; pyproject reads it)."""

__version__ = "0.2.0"
