"""Fixtures: the service's databases (SQLite and PostgreSQL), for the service benchmarks' tools."""

from __future__ import annotations

from tests.agent_coordinator.conftest import database, postgres

__all__ = ["database", "postgres"]
