"""Fixtures: the service over real HTTP on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent_coordinator.harness import Postgres, Service, throwaway_cluster

pytest.importorskip("fastapi", reason="the service needs the server extra")

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    yield from throwaway_cluster("agentshape-pg-")


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "coordinator.db")
    cluster: Postgres = request.getfixturevalue("postgres")
    return cluster.new_database()


ServiceFactory = Callable[..., Service]


@pytest.fixture
def make_service(tmp_path: Path, database: str) -> Iterator[ServiceFactory]:
    started: list[Service] = []

    def make(**kwargs: object) -> Service:
        service = Service(tmp_path, database, **kwargs)  # type: ignore[arg-type]
        started.append(service)
        return service

    yield make
    for service in started:
        service.close()


@pytest.fixture
def service(make_service: ServiceFactory) -> Service:
    return make_service()
