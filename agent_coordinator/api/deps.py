"""What every handler needs, as FastAPI dependencies: the services, the store, and auth."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from agent_coordinator.errors import Unauthorized
from agent_coordinator.execution import Execution
from agent_coordinator.retention import Sweeper
from agent_coordinator.runner import Runner
from agent_coordinator.store.base import SqlStore
from agent_coordinator.store.records import RunRecord
from agent_coordinator.webhooks import WebhookSettings

__all__ = ["Limits", "Notifier", "Services", "ServicesDep", "bearer_matches", "require_token"]


@dataclass(frozen=True)
class Limits:
    """The sizes the API accepts."""

    max_body_bytes: int = 1024 * 1024
    """The largest request body (413 above it)."""
    max_schema_bytes: int = 256 * 1024
    """The largest output schema (413 above it)."""
    max_page: int = 200
    """The most items a page may ask for (422 above it)."""
    max_wait_s: float = 120.0
    """The longest ``wait`` a ``POST /runs`` may ask for (422 above it)."""


class Notifier:
    """Hands a run's end to the requests waiting for it (runs ended by this process's runners)."""

    def __init__(self) -> None:
        self._waiters: dict[str, list[asyncio.Future[RunRecord]]] = {}

    def subscribe(self, run_id: str) -> asyncio.Future[RunRecord]:
        """Return a future that gets the run when it ends; pass it to :meth:`unsubscribe` after."""
        future: asyncio.Future[RunRecord] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(run_id, []).append(future)
        return future

    def unsubscribe(self, run_id: str, future: asyncio.Future[RunRecord]) -> None:
        """Stop waiting for ``run_id`` with ``future``."""
        waiting = self._waiters.get(run_id)
        if waiting is None:
            return
        with contextlib.suppress(ValueError):
            waiting.remove(future)
        if not waiting:
            del self._waiters[run_id]

    def notify(self, run: RunRecord) -> None:
        """Give the ended ``run`` to whoever waits for it."""
        for future in self._waiters.pop(run.id, ()):
            if not future.done():
                future.set_result(run)


@dataclass
class Services:
    """Everything the handlers use; one per app, kept on ``app.state.services``."""

    store: SqlStore
    execution: Execution
    token: str | None = None
    limits: Limits = field(default_factory=Limits)
    runner: Runner | None = None
    sweeper: Sweeper | None = None
    notifier: Notifier = field(default_factory=Notifier)
    webhooks: WebhookSettings | None = None
    """The webhook secret and allowed hosts; ``None``: runs may not name a webhook."""
    evals_dir: Path | None = None
    """Where ``agentshape eval`` reports are read for ``/reports/evals``; ``None``: none."""


async def _services(request: Request) -> Services:
    # async, like require_token: FastAPI runs a plain-def dependency in a worker thread
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(_services)]
"""The app's services, for a handler's signature."""


def bearer_matches(header: str, token: str) -> bool:
    """Tell whether an ``Authorization`` header holds ``Bearer <token>`` (constant-time)."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


async def require_token(request: Request, services: ServicesDep) -> None:
    """Check the bearer token when the service has one (compared in constant time).

    Raises:
        Unauthorized: The ``Authorization`` header is missing or holds another token.
    """
    if services.token is None:
        return
    if not bearer_matches(request.headers.get("authorization", ""), services.token):
        raise Unauthorized("Unauthorized", "a valid 'Authorization: Bearer <token>' is required")
