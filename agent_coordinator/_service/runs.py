"""Submitting runs and waiting for them: what the HTTP API and the MCP server both call.

:func:`submit_run` checks a start or resume request and stores it (once per idempotency key);
:func:`wait_for_end` waits for a run to end, woken at once by this process's runners;
:func:`submit_and_wait` is ``POST /runs``: both together.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable

from pydantic import JsonValue

from agent_contracts._runs import JsonSchema, RunOptions
from agent_coordinator._errors import (
    BadRequest,
    NotFound,
    PayloadTooLarge,
    StoreUnavailable,
    Unprocessable,
)
from agent_coordinator._ids import new_id
from agent_coordinator._runner import Runner
from agent_coordinator._runner_processes import Handed, RunnerProcesses
from agent_coordinator._service.bodies import RunCreate
from agent_coordinator._service.services import Services
from agent_coordinator._store.records import TERMINAL, Claim, NewRun, RunInput, RunRecord
from agent_coordinator._webhooks import check_webhook_url

__all__ = [
    "checked_input",
    "stored_run",
    "submit_and_wait",
    "submit_run",
    "until_end",
    "wait_for_end",
]

_END_POLL_S = 0.5
"""How often a wait reads a run ended by another process's runner (this process's wake it)."""
_WOKEN_END_POLL_S = 5.0
"""The same when the store tells of runs ended in other processes (PostgreSQL): a fallback."""


async def stored_run(services: Services, run_id: str) -> RunRecord:
    """Return the stored run ``run_id``."""
    run = await services.store.call(services.store.get_run, run_id)
    if run is None:
        raise NotFound("RunNotFound", f"no run {run_id!r}")
    return run


async def wait_for_end(services: Services, run_id: str, timeout_s: float) -> RunRecord:
    """Wait up to ``timeout_s`` for a run to end; return it as it is then."""
    # Runs ended by this process's runners are handed over at once; runs ended by other runners are
    # read from the store when it tells of their end (PostgreSQL), else twice a second.
    ended = services.notifier.subscribe(run_id)
    try:
        return await until_end(services, await stored_run(services, run_id), ended, timeout_s)
    finally:
        services.notifier.unsubscribe(run_id, ended)


async def until_end(
    services: Services, run: RunRecord, ended: asyncio.Future[RunRecord | None], timeout_s: float
) -> RunRecord:
    """Wait for ``ended`` (subscribed before ``run`` was read) or poll, up to ``timeout_s``.

    A run this wait was told of that has not ended is waited for again: a runner process that
    had no free slot for a run handed to it puts the run back in the queue and says its work on
    it is done, and a store that lost its notifications wakes every wait. The wait subscribes
    anew before it reads the run again, so the end that follows wakes it too; until then it
    reads the run every :data:`_END_POLL_S`.

    A read the store cannot make (the database is down or not answering) ends the wait early
    with the run as last read: the caller gets its id and status (202 while it runs), not a 503
    that reads as "not created" to a client, which would then make (and pay for) the run again.
    So does the server's shutdown (:meth:`Notifier.stop`), within its grace period.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    poll_s = _WOKEN_END_POLL_S if services.store.wakes_runners else _END_POLL_S
    again: asyncio.Future[RunRecord | None] | None = None
    try:
        while run.status not in TERMINAL:
            left = deadline - loop.time()
            if left <= 0 or services.notifier.stopping:
                break
            if ended.done():  # told, yet the run read since has not ended
                ended = again = services.notifier.subscribe(run.id)
                poll_s = _END_POLL_S
                found = await _read_again(services, run.id)
                if found is None:
                    break
                run = found
                continue
            await _done_or_after(ended, min(left, poll_s))
            found = ended.result() if ended.done() else None
            if found is None:
                if services.notifier.stopping:
                    break
                found = await _read_again(services, run.id)
                if found is None:
                    break
            run = found
    finally:
        if again is not None:
            services.notifier.unsubscribe(run.id, again)
    return run


async def _read_again(services: Services, run_id: str) -> RunRecord | None:
    """Return the stored run ``run_id``, or ``None`` when the store cannot be read now."""
    try:
        return await stored_run(services, run_id)
    except StoreUnavailable:
        return None


async def _done_or_after(future: asyncio.Future[RunRecord | None], timeout_s: float) -> None:
    """Return once ``future`` is done or ``timeout_s`` seconds have passed, leaving it as it is."""
    # One future and one timer: what asyncio.wait((future,), timeout=...) does for one future
    # without its sets and counters, on the path of every waited POST /runs.
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    timer = loop.call_later(timeout_s, wake)
    future.add_done_callback(wake)
    try:
        await woken
    finally:
        timer.cancel()
        future.remove_done_callback(wake)


async def _inherit(
    services: Services, body: RunCreate, session_id: str
) -> tuple[RunCreate, JsonSchema | None]:
    """A resume keeps what it leaves out from the run that started the session."""
    # A session started with an inline or named schema stays held to it (a named one as the content
    # it started with, whatever the registry holds under that name now).
    given = body.model_fields_set
    keeps_contract = not given & {"output_schema", "output_schema_name"}
    if "parameters" in given and not keeps_contract:
        return body, None
    earlier = await services.store.call(services.store.session_runs, session_id)
    if not earlier:
        return body, None
    first = earlier[0].input
    update: dict[str, object] = {}
    if "parameters" not in given:
        update["parameters"] = first.parameters
    if keeps_contract:
        update["output_schema"] = first.output_schema
        update["output_schema_name"] = first.output_schema_name
        if "output_schema_options" not in given and first.options:
            update["output_schema_options"] = RunOptions.model_validate(first.options)
    held = first.named_schema if keeps_contract else None
    return body.model_copy(update=update), held


def _webhook(services: Services, given: str | None, agent_name: str) -> str | None:
    """Return the webhook a run's end goes to (the request's, else its agent file's), checked."""
    from_agent = given is None
    webhook = services.execution.config(agent_name).webhook if from_agent else given
    if webhook is None:
        return None
    source = f"the webhook of agent {agent_name!r}" if from_agent else "webhook"
    if services.webhooks is None:
        raise BadRequest(
            "WebhooksNotConfigured",
            f"{source} {webhook!r} needs a webhook secret to sign deliveries with, and this "
            "service has none; start it with --webhook-secret (or AGENTSHAPE_WEBHOOK_SECRET)",
        )
    check_webhook_url(webhook, services.webhooks.allow, source=source)
    return webhook


async def checked_input(
    services: Services,
    body: RunCreate,
    agent_name: str,
    parameters: dict[str, JsonValue],
    held: JsonSchema | None = None,
) -> RunInput:
    """Return a run request as stored, checked against the agent, its schema and the limits."""
    if body.output_schema is not None:
        limit = services.limits.max_schema_bytes
        size = len(body.model_dump_json(include={"output_schema"}))
        if size > limit:
            raise PayloadTooLarge(
                "SchemaTooLarge", f"output_schema is {size} bytes; the limit is {limit}"
            )
    webhook = _webhook(services, body.webhook, agent_name)
    options = body.output_schema_options
    wanted = RunInput(
        prompt=body.prompt or "",
        parameters=parameters,
        output_schema=body.output_schema,
        output_schema_name=body.output_schema_name,
        named_schema=held if body.output_schema_name is not None else None,
        options=options.model_dump(mode="json", exclude_unset=True) if options else {},
        model=body.model,
        stream=body.stream,
        webhook=webhook,
    )
    if wanted.output_schema_name is None and wanted.output_schema is None:
        # the agent's own contract, compiled and cached at load: cheap, so in place
        checked = services.execution.check(agent_name, wanted)
    else:
        checked = await asyncio.to_thread(services.execution.check, agent_name, wanted)
    return checked


async def submit_run(
    services: Services,
    body: RunCreate,
    key: str | None,
    *,
    run_id: str | None = None,
    run_now: bool = False,
) -> RunRecord:
    """Check a run request, store it (once per idempotency ``key``) and wake the runners.

    Args:
        services: The service's store, runner and settings.
        body: The request.
        key: Its idempotency key, if it has one.
        run_id: The id to store the run under (a new one if ``None``).
        run_now: Whether the caller waits for the run: then, when a runner process has a free
            slot, the run is stored already claimed by its runner and handed to it over its
            channel; else, when this process's runner has a free worker no queued run waits
            for, stored claimed by that runner and handed to it in memory; else queued.

    Returns:
        The run as stored (the idempotency key's earlier run, if the key was used before).

    Raises:
        ServiceError: The request is invalid (422, 400), names an unknown agent, schema or
            session (404), or conflicts with the key's earlier request or a busy session (409).
    """
    # The HTTP API and the MCP server both start and resume sessions through here.
    parameters = body.parameters
    held: JsonSchema | None = None  # a resumed session's named schema, as it started with it
    if body.type == "start_session":
        if body.agent_name is None:
            raise Unprocessable("InvalidRequest", "start_session needs agent_name")
        if body.session_id is not None:
            raise Unprocessable(
                "InvalidRequest", "start_session starts a new session; leave out session_id"
            )
        if body.prompt is None and not body.parameters:
            raise Unprocessable(
                "InvalidRequest",
                "start_session needs a prompt, or the agent's parameters (they are then the task)",
            )
        agent_name, session_id = body.agent_name, new_id("ses")
    else:
        if body.session_id is None:
            raise Unprocessable("InvalidRequest", "resume_session needs session_id")
        if body.prompt is None:
            raise Unprocessable("InvalidRequest", "resume_session needs a prompt")
        session = await services.store.call(services.store.get_session, body.session_id)
        if session is None:
            raise NotFound("SessionNotFound", f"no session {body.session_id!r}")
        if body.agent_name is not None and body.agent_name != session.agent_name:
            raise Unprocessable(
                "InvalidRequest",
                f"session {session.id} belongs to agent {session.agent_name!r}, "
                f"not {body.agent_name!r}",
            )
        agent_name, session_id = session.agent_name, session.id
        body, held = await _inherit(services, body, session_id)
        parameters = body.parameters
    checked = await checked_input(services, body, agent_name, parameters, held)
    digest = (
        hashlib.sha256(body.model_dump_json(exclude_unset=True).encode()).hexdigest()
        if key is not None
        else None
    )
    new = NewRun(
        id=run_id or new_id("run"),
        session_id=session_id,
        kind=body.type,
        agent_name=agent_name,
        input=checked,
        idempotency_key=key,
        request_hash=digest,
    )
    runner = services.runner
    if run_now and runner is not None:
        # A runner process with a free slot first: serve's loop also answers every request, so
        # its own runner takes a waited run only when every runner process is full.
        processes = services.runner_processes
        slot = None if processes is None else processes.reserve()
        if processes is not None and slot is not None:
            return await _hand_to_process(services, processes, slot, runner.lease_s, new)
        if runner.reserve():
            return await _hand_over(services, runner, new)
    run, created = await services.store.call(services.store.create_run, new)
    if created:
        services.wake_runners(services.next_turn())
    return run


async def submit_and_wait(
    services: Services, body: RunCreate, key: str | None, wait_s: float
) -> RunRecord:
    """Store a run (:func:`submit_run`), then wait up to ``wait_s`` seconds for it to end.

    Args:
        services: The service's store, runners and settings.
        body: The request.
        key: Its idempotency key, if it has one.
        wait_s: How long to wait for the run's end (``0``: not at all; at most the service's
            ``max_wait_s``).

    Returns:
        The run as it is when it ended or the wait ran out (the idempotency key's earlier run,
        if the key was used before).

    Raises:
        ServiceError: As :func:`submit_run`.
    """
    if wait_s <= 0:
        return await submit_run(services, body, key)
    # Subscribe before the run is stored, so its end cannot slip by unseen.
    run_id = new_id("run")
    ended = services.notifier.subscribe(run_id)
    try:
        run = await submit_run(services, body, key, run_id=run_id, run_now=True)
        timeout_s = min(wait_s, services.limits.max_wait_s)
        if run.id != run_id:  # the idempotency key's earlier run
            return await wait_for_end(services, run.id, timeout_s)
        return await until_end(services, run, ended, timeout_s)
    finally:
        services.notifier.unsubscribe(run_id, ended)


async def _hand_over(services: Services, runner: Runner, new: NewRun) -> RunRecord:
    """Store a run claimed by ``runner`` (a slot reserved for it) and have it executed now."""
    return await _store_claimed(
        services, new, runner.id, runner.lease_s, runner.take, runner.unreserve
    )


async def _hand_to_process(
    services: Services, processes: RunnerProcesses, slot: Handed, lease_s: float, new: NewRun
) -> RunRecord:
    """Store a run claimed by a runner process's runner (``slot``) and send it the run."""
    return await _store_claimed(
        services,
        new,
        slot.runner,
        lease_s,
        functools.partial(processes.hand, slot),
        functools.partial(processes.unreserve, slot),
    )


async def _store_claimed(
    services: Services,
    new: NewRun,
    owner: str,
    lease_s: float,
    start: Callable[[Claim], None],
    give_back: Callable[[], None],
) -> RunRecord:
    """Store ``new`` claimed by runner ``owner``; then ``start`` its claim, or ``give_back``.

    The claim is started once stored even if the request is cancelled meanwhile: the run is
    stored claimed, and left to its lease it would wait that long for another runner.
    """

    def stored_then(stored: asyncio.Future[tuple[RunRecord, Claim | None]]) -> None:
        failed = stored.cancelled() or stored.exception() is not None
        claim = None if failed else stored.result()[1]
        if claim is None:
            give_back()
        else:
            start(claim)

    stored = asyncio.ensure_future(
        services.store.call(services.store.create_claimed_run, new, owner, lease_s)
    )
    stored.add_done_callback(stored_then)
    run, _ = await asyncio.shield(stored)
    return run
