"""Signed webhooks: which URLs a run may name, and the service's deliverer of runs' ends.

The store keeps one delivery per ended run that named a webhook (written with the run's end, so
whichever process ended the run, the delivery exists). :class:`Deliverer` runs in ``agentshape
serve``: it claims due deliveries with a lease, POSTs each body signed with the service's secret
(``X-Agentshape-Signature: sha256=<hex HMAC-SHA256 of the raw body>``, ``X-Agentshape-Event-Id``
for dedupe), and retries failures with exponential backoff for a day. Delivery is at least once:
a receiver that answered but was not heard, or a service that stopped mid-attempt, means the
same event again, which the receiver drops by its event id.

The service delivers rather than the runners because the secret and the allowed hosts are the
service's configuration, and a queued run cancelled over the API ends without any runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2

from agent_coordinator._errors import BadRequest
from agent_coordinator._runner import runner_id
from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.records import DeliveryRecord

__all__ = [
    "EVENT_ID_HEADER",
    "SECRET_ENV",
    "SIGNATURE_HEADER",
    "Deliverer",
    "WebhookSettings",
    "check_webhook_url",
    "retry_delay",
    "sign",
]

logger = logging.getLogger(__name__)

SECRET_ENV = "AGENTSHAPE_WEBHOOK_SECRET"
"""The environment variable holding the signing secret when ``--webhook-secret`` is not given."""
SIGNATURE_HEADER = "X-Agentshape-Signature"
"""The header carrying ``sha256=<hex HMAC-SHA256 of the raw body with the secret>``."""
EVENT_ID_HEADER = "X-Agentshape-Event-Id"
"""The header carrying the delivery's event id, the same on every retry."""
RETRY_FOR_S = 24 * 3600.0
"""How long a delivery is retried after the run ended before it is given up."""
_LONGEST_WAIT_S = 3600.0
"""The longest wait between two attempts."""
_HOLD_MARGIN_S = 30.0
"""Seconds past an attempt's timeout before another deliverer may take the delivery over."""


@dataclass(frozen=True)
class WebhookSettings:
    """How the service signs and where it may deliver webhooks."""

    secret: str = field(repr=False)
    """The HMAC-SHA256 key every body is signed with (never shown in a repr)."""
    allow: frozenset[str] = field(default_factory=frozenset)
    """The hosts a webhook may name (lower case); empty: any host."""
    timeout_s: float = 10.0
    """Seconds one attempt may take (connect, send and answer)."""
    first_retry_s: float = 1.0
    """The wait after the first failed attempt; each later wait doubles, up to an hour."""
    poll_s: float = 0.5
    """How often the deliverer looks for due deliveries when it has none."""
    concurrency: int = 8
    """Attempts one deliverer makes at once."""


def sign(secret: str, body: bytes) -> str:
    """Return the ``X-Agentshape-Signature`` value of ``body``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def check_webhook_url(url: str, allow: frozenset[str], *, source: str = "webhook") -> None:
    """Refuse a webhook URL the service will not fetch.

    Args:
        url: The URL a request (or an agent file) named.
        allow: The hosts allowed (lower case); empty allows any.
        source: Where the URL comes from, as the error message names it.

    Raises:
        BadRequest: ``InvalidWebhook`` when the URL is not http(s) with a host, or its host is
            not among ``allow`` (400).
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as error:
        raise BadRequest("InvalidWebhook", f"{source} {url!r} is not a URL: {error}") from error
    if parts.scheme not in ("http", "https") or not host:
        raise BadRequest(
            "InvalidWebhook", f"{source} {url!r} is not an http:// or https:// URL with a host"
        )
    if allow and host.lower() not in allow:
        raise BadRequest(
            "InvalidWebhook",
            f"{source} {url!r}: host {host!r} is not allowed here (--webhook-allow: "
            f"{', '.join(sorted(allow))})",
        )


def retry_delay(attempts: int, first_retry_s: float) -> float:
    """Return the wait after ``attempts`` failed attempts: doubling from ``first_retry_s``.

    Args:
        attempts: Attempts made so far (1 or more).
        first_retry_s: The wait after the first.

    Returns:
        Seconds until the next attempt, at most an hour.
    """
    return min(first_retry_s * 2.0 ** min(attempts - 1, 30), _LONGEST_WAIT_S)


class Deliverer:
    """The service's background task that delivers runs' ends to their webhooks.

    Args:
        store: The store the deliveries are in.
        settings: The secret, the allowed hosts and the timings.
    """

    def __init__(self, store: SqlStore, settings: WebhookSettings) -> None:
        self.store = store
        self.settings = settings
        self.id = runner_id()  # host, process and a nonce, as a runner's
        self._task: asyncio.Task[None] | None = None
        self._client: httpx2.AsyncClient | None = None

    def start(self) -> None:
        """Start delivering on the running event loop."""
        # Redirects are not followed: a redirect could lead past the allowed hosts.
        self._client = httpx2.AsyncClient(
            timeout=self.settings.timeout_s, follow_redirects=False, trust_env=False
        )
        self._task = asyncio.create_task(self._loop(), name=f"webhooks-{self.id}")

    async def stop(self) -> None:
        """Stop delivering; an attempt in flight is abandoned and tried again later."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._client is not None:
            await self._client.aclose()

    async def _loop(self) -> None:
        # Up to ``concurrency`` attempts at once, so one slow receiver does not hold up the rest.
        slots = asyncio.Semaphore(self.settings.concurrency)
        attempts: set[asyncio.Task[None]] = set()
        try:
            while True:
                await slots.acquire()
                try:
                    delivery = await self.store.call(
                        self.store.claim_delivery, self.id, self.settings.timeout_s + _HOLD_MARGIN_S
                    )
                except Exception:
                    logger.exception("could not read the webhook deliveries")
                    delivery = None
                if delivery is None:
                    slots.release()
                    await asyncio.sleep(self.settings.poll_s)
                    continue
                task = asyncio.create_task(self._attempt_in_slot(delivery, slots))
                attempts.add(task)
                task.add_done_callback(attempts.discard)
        finally:
            for task in attempts:
                task.cancel()
            await asyncio.gather(*attempts, return_exceptions=True)

    async def _attempt_in_slot(self, delivery: DeliveryRecord, slots: asyncio.Semaphore) -> None:
        try:
            await self._attempt(delivery)
        except Exception:
            # The delivery is due again once its claim runs out; keep delivering the rest.
            logger.exception("webhook delivery %s could not be recorded", delivery.id)
        finally:
            slots.release()

    async def _attempt(self, delivery: DeliveryRecord) -> None:
        """POST one delivery once and record how it went."""
        try:
            check_webhook_url(delivery.url, self.settings.allow)
        except BadRequest as refused:  # the allowed hosts changed since the run was created
            await self._give_up(delivery, None, refused.message)
            return
        status_code, error = await self._post(delivery)
        if error is None:
            await self.store.call(
                self.store.record_delivery,
                delivery.id,
                self.id,
                status="delivered",
                status_code=status_code,
                error=None,
            )
            return
        next_at = time.time() + retry_delay(delivery.attempts, self.settings.first_retry_s)
        if next_at > delivery.created_at + RETRY_FOR_S:
            await self._give_up(delivery, status_code, error)
            return
        await self.store.call(
            self.store.record_delivery,
            delivery.id,
            self.id,
            status="pending",
            status_code=status_code,
            error=error,
            next_attempt_at=next_at,
        )

    async def _give_up(self, delivery: DeliveryRecord, status_code: int | None, error: str) -> None:
        logger.warning(
            "webhook delivery %s of run %s to %s given up after %d attempts: %s",
            delivery.id,
            delivery.run_id,
            delivery.url,
            delivery.attempts,
            error,
        )
        await self.store.call(
            self.store.record_delivery,
            delivery.id,
            self.id,
            status="failed",
            status_code=status_code,
            error=error,
        )

    async def _post(self, delivery: DeliveryRecord) -> tuple[int | None, str | None]:
        """Send one attempt; return the receiver's status (``None``: none) and the failure."""
        body = delivery.body.encode()
        headers = {
            "content-type": "application/json",
            "user-agent": "agentshape-webhooks",
            SIGNATURE_HEADER: sign(self.settings.secret, body),
            EVENT_ID_HEADER: delivery.id,
        }
        assert self._client is not None
        try:
            # The client's timeout bounds each phase; this bounds the whole attempt, so a
            # receiver that answers a byte at a time cannot hold it past the claim.
            async with asyncio.timeout(self.settings.timeout_s):
                response = await self._client.post(delivery.url, content=body, headers=headers)
        except TimeoutError:
            return None, f"no answer within {self.settings.timeout_s:g} s"
        except httpx2.HTTPError as error:
            return None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if 200 <= response.status_code < 300:
            return response.status_code, None
        return response.status_code, f"the receiver answered {response.status_code}"
