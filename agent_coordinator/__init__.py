"""agentshape's coordinator: runs, sessions, validated results and the schema registry over HTTP.

``agentshape serve`` (or ``python -m agent_coordinator serve``) starts the API with in-process
runners over an embedded SQLite file; ``agentshape runner`` adds runners in other processes
against the same database (SQLite or PostgreSQL).
"""

from __future__ import annotations

from agent_coordinator.store import SqliteStore, SqlStore, open_store

__all__ = ["SqlStore", "SqliteStore", "open_store"]
