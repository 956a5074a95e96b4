"""agentshape's coordinator: runs, sessions, validated results and the schema registry over HTTP.

``agentshape serve`` (or ``python -m agent_coordinator serve``) starts the API with in-process
runners over an embedded SQLite file; ``agentshape runner`` adds runners in other processes
against the same database (SQLite or PostgreSQL). In Python: :func:`open_store`, an
:class:`Execution` over a fleet and a :class:`Runner` that executes stored runs;
``agent_coordinator._api.app.create_app`` gives the ASGI app (it needs the ``server`` extra,
which this package does not import until it is used).
"""

from __future__ import annotations

from agent_coordinator._execution import Execution
from agent_coordinator._runner import Runner
from agent_coordinator._store import PostgresStore, SqliteStore, SqlStore, open_store

__all__ = [
    "Execution",
    "PostgresStore",
    "Runner",
    "SqlStore",
    "SqliteStore",
    "open_store",
]
