"""``agentshape run --resume SESSION_ID``: continue a session the service stored, in this process.

:func:`register_resume` adds ``--resume`` and ``--database`` to the executor's ``run`` command
(which cannot know the service's store). The resumed run is stored in that database as a
``resume_session`` run, exactly as ``POST /runs`` would store it: the session's parameters,
contract and options are kept (``--param`` and the option flags given override them), the
``--task`` is the next prompt, and the service then shows the run, its events and its result.
This process claims and executes it; if a service's runner claims it first, the command waits
for that runner to end it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO, TypeAlias

from pydantic import JsonValue

from agent_contracts._runs import RunResult
from agent_coordinator._errors import ServiceError
from agent_coordinator._execution import Execution
from agent_coordinator._ids import new_id
from agent_coordinator._runner import Runner
from agent_coordinator._store import DEFAULT_DATABASE, SqlStore, open_store
from agent_coordinator._store.records import TERMINAL, NewRun, RunInput, RunRecord
from agent_core._fleet import load_fleet
from agent_core._registry import SchemaRegistry
from agent_executor._cli.commands import UsageError
from agent_executor._cli.flags import run_options
from agent_executor._cli.inputs import parse_param
from agent_executor._cli.main import write_result
from agent_executor._providers.resolve import KNOWN_PREFIXES
from agent_executor._tools import KNOWN_TOOLS

__all__ = ["register_resume", "resume_session"]

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace, TextIO, TextIO], int]

_LEASE_S = 30.0
"""Seconds this process's claim on the run lasts unrenewed (renewed every third of it)."""
_POLL_S = 0.5
"""How often the command reads a run another runner executes, until it ends."""

# Flags of ``run`` that choose a new session's contract or its presentation; a resume keeps the
# session's contract and prints the stored result.
_NOT_WITH_RESUME = {
    "schema": "--schema",
    "schema_file": "--schema-file",
    "stream": "--stream",
}


def register_resume(commands: Subcommands) -> None:
    """Add ``--resume SESSION_ID`` and ``--database`` to the ``run`` command in ``commands``.

    Without ``--resume`` the command runs as before; ``--database`` alone is a usage error.
    """
    run = commands.choices["run"]
    run.add_argument(
        "--resume",
        metavar="SESSION_ID",
        help="continue a session the service stored (in --database), with --task as the next "
        "prompt; its parameters, contract and options are kept",
    )
    run.add_argument(
        "--database",
        default=None,
        help=f"with --resume: the service's store, a SQLite file (default {DEFAULT_DATABASE}) "
        "or a postgresql:// URL",
    )
    plain: Handler = run.get_default("handler")

    def handler(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        if args.resume is None:
            if args.database is not None:
                raise UsageError("--database goes with --resume SESSION_ID")
            return plain(args, out, err)
        return _resume_command(args, out)

    run.set_defaults(handler=handler)


def _resume_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``agentshape run --resume``: 0 when the resumed run completed, 1 when it failed."""
    for name, flag in _NOT_WITH_RESUME.items():
        if getattr(args, name, None):
            raise UsageError(f"{flag} does not go with --resume: the session keeps its contract")
    fleet = load_fleet(
        args.agents_dir,
        known_tools=Execution.known_tools(KNOWN_TOOLS),
        known_model_prefixes=KNOWN_PREFIXES,
    )
    execution = Execution(
        fleet,
        SchemaRegistry(args.registry),
        default_model=args.model,
        env=os.environ,
        workspace=args.workspace or Path("."),
    )
    store = open_store(args.database)
    try:
        parameters = dict(parse_param(p) for p in args.param)
        options = run_options(args).model_dump(mode="json", exclude_unset=True)
        ended = asyncio.run(
            resume_session(
                store,
                execution,
                args.resume,
                args.task,
                agent=args.agent,
                parameters=parameters or None,
                options=options,
                model=args.model,
            )
        )
    finally:
        store.close()
    if ended.status == "cancelled" or ended.result is None:
        message = (ended.error or {}).get("message", "the run ended without a result")
        raise UsageError(f"run {ended.id} of session {ended.session_id} {ended.status}: {message}")
    return write_result(RunResult.model_validate(ended.result), out, as_json=args.json)


async def resume_session(
    store: SqlStore,
    execution: Execution,
    session_id: str,
    prompt: str,
    *,
    agent: str | None = None,
    parameters: Mapping[str, JsonValue] | None = None,
    options: Mapping[str, JsonValue] | None = None,
    model: str | None = None,
) -> RunRecord:
    """Store a ``resume_session`` run of a stored session, execute it here, and return it ended.

    Args:
        store: The service's store.
        execution: The fleet and registry the run is checked and executed with.
        session_id: The session to continue.
        prompt: The next user message.
        agent: The agent the caller expects the session to belong to (``None``: any).
        parameters: New parameters (``None`` keeps the session's).
        options: Run options overriding the session's.
        model: The model (``None``: the session's latest run's, else the agent's or default).

    Returns:
        The run as stored once it ended (completed, failed or cancelled).

    Raises:
        UsageError: No such session, another agent's session, or a request the service would
            refuse (a busy session, parameters that break the schema...), with its error code.
    """
    session = await store.call(store.get_session, session_id)
    if session is None:
        raise UsageError(f"no session {session_id!r} in {store.url}")
    if agent is not None and agent != session.agent_name:
        raise UsageError(f"session {session_id} belongs to agent {session.agent_name!r}")
    runs = await store.call(store.session_runs, session_id)
    first, latest = runs[0].input, runs[-1].input
    wanted = RunInput.model_validate(
        {
            "prompt": prompt,
            "parameters": first.parameters if parameters is None else dict(parameters),
            "output_schema": first.output_schema,
            "output_schema_name": first.output_schema_name,
            "options": {**first.options, **(options or {})},
            "model": model or latest.model,
        }
    )
    try:
        checked = execution.check(session.agent_name, wanted)
        new = NewRun(
            id=new_id("run"),
            session_id=session_id,
            kind="resume_session",
            agent_name=session.agent_name,
            input=checked,
        )
        stored, _ = await store.call(store.create_run, new)
    except ServiceError as error:
        raise UsageError(f"{error.code}: {error.message}") from None
    return await _execute(store, Runner(store, execution, workers=1, lease_s=_LEASE_S), stored.id)


async def _execute(store: SqlStore, runner: Runner, run_id: str) -> RunRecord:
    """Execute the run here whenever it is waiting, until it has ended; return it then."""
    # A service's runner may claim it first: wait for that one, and take the run back if it
    # is requeued (that runner was lost).
    while True:
        claim = await store.call(store.claim_run, run_id, runner.id, _LEASE_S)
        if claim is not None:
            renewing = asyncio.create_task(_renew(store, run_id, runner.id))
            try:
                await runner.execute(claim)
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing
        run = await store.call(store.get_run, run_id)
        if run is not None and run.status in TERMINAL:
            return run
        await asyncio.sleep(_POLL_S)


async def _renew(store: SqlStore, run_id: str, owner: str) -> None:
    """Keep this process's lease on a run it executes (a runner's tender does so for its own)."""
    while True:
        await asyncio.sleep(_LEASE_S / 3)
        await store.call(store.renew, run_id, owner, _LEASE_S)
