"""The store: one implementation over SQL, for SQLite and PostgreSQL alike.

:class:`SqlStore` is every query (:class:`RunQueries`, :class:`LeaseQueries`,
:class:`BatchQueries`, :class:`RetentionQueries`, :class:`CallLimitQueries`) over the plumbing
of :class:`SqlBase`.
Every method is one transaction (a prune's batch, one a session), so a run is stored before it
is answered, a claim hands a run to exactly one runner, and a run ends at most once:
:meth:`SqlStore.finish` only succeeds for the runner that still holds the run's lease.

Methods block; async callers use :meth:`SqlStore.call` (on SQLite, in place unless the call
would wait for a lock, then a worker thread; on PostgreSQL, on the event loop over async
connections).
"""

from __future__ import annotations

from agent_coordinator._store.batches import BatchQueries
from agent_coordinator._store.call_limits import CallLimitQueries
from agent_coordinator._store.retention import RetentionQueries
from agent_coordinator._store.sql import Cursor

__all__ = ["Cursor", "SqlStore"]


class SqlStore(BatchQueries, RetentionQueries, CallLimitQueries):
    """Runs, sessions, batches, attempts, events, webhook deliveries and model-call slots in SQL."""
