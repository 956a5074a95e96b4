"""``agents:start_session``: an agent starts a child session of another agent and gets its result.

An agent that lists the tool in its config (``tools: [agents:start_session]``) may call it with
an ``agent_name``, a ``prompt`` and optionally ``parameters``, an inline ``output_schema`` or an
``output_schema_name``. The child is stored like any run, linked to its parent session (the child's
``parent_session_id``, the parent's ``children``), and run by the parent's runner itself, so a
parent waiting for a child never waits for a free worker. The parent receives the child's
``result_data`` as indented JSON, else its ``result_text``; a failed child is an error tool
result naming its error type and problems.

Depth (a child of a child...) and fan-out (children of one session) are bounded, by the limits
``agentshape run`` uses for the children it runs in-process (:mod:`agent_executor._child_sessions`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pydantic import JsonValue

from agent_contracts._errors import ToolExecutionError
from agent_coordinator._errors import ServiceError
from agent_coordinator._execution import child_result_text
from agent_coordinator._ids import new_id
from agent_coordinator._store.records import TERMINAL, NewRun, RunInput, RunRecord
from agent_executor._child_sessions import MAX_CHILDREN, MAX_DEPTH, TOOL_NAME, StartSessionTool

if TYPE_CHECKING:
    from agent_coordinator._runner import Runner

__all__ = ["MAX_CHILDREN", "MAX_DEPTH", "TOOL_NAME", "StartSession"]


class StartSession(StartSessionTool):
    """The ``agents:start_session`` tool of one parent run.

    Args:
        runner: The runner executing the parent (it runs the child too).
        parent: The parent run.
        depth: The parent session's depth.
    """

    def __init__(self, runner: Runner, parent: RunRecord, depth: int) -> None:
        super().__init__(depth)
        self.runner = runner
        self.parent = parent

    async def _start(self, arguments: dict[str, JsonValue]) -> str:
        store = self.runner.store
        if self.depth + 1 > MAX_DEPTH:
            raise ToolExecutionError(
                f"child sessions may nest {MAX_DEPTH} deep; this session is at depth {self.depth}",
                tool=self.name,
            )
        children = await store.call(
            store.list_sessions, limit=MAX_CHILDREN + 1, parent_session_id=self.parent.session_id
        )
        if len(children) >= MAX_CHILDREN:
            raise ToolExecutionError(
                f"a session may start at most {MAX_CHILDREN} children", tool=self.name
            )
        agent_name = str(arguments["agent_name"])
        parameters = arguments.get("parameters")
        schema = arguments.get("output_schema")
        name = arguments.get("output_schema_name")
        try:
            wanted = RunInput(
                prompt=str(arguments["prompt"]),
                parameters=parameters if isinstance(parameters, dict) else {},
                output_schema=schema if isinstance(schema, dict) else None,
                output_schema_name=name if isinstance(name, str) else None,
                stream=self.parent.input.stream,
            )
            checked = await asyncio.to_thread(self.runner.execution.check, agent_name, wanted)
        except ServiceError as error:
            details = [f"{d.path}: {d.message}" for d in error.details]
            raise ToolExecutionError(
                f"{error.code}: {error.message}" + "".join(f"\n- {d}" for d in details),
                tool=self.name,
            ) from error
        child = NewRun(
            id=new_id("run"),
            session_id=new_id("ses"),
            kind="start_session",
            agent_name=agent_name,
            input=checked,
            parent_session_id=self.parent.session_id,
            depth=self.depth + 1,
        )
        stored, _ = await store.call(store.create_run, child)
        claim = await store.call(store.claim_run, stored.id, self.runner.id, self.runner.lease_s)
        if claim is not None:
            await self.runner.execute(claim)
        ended = await self._wait(stored.id)
        return self._render(ended)

    async def _wait(self, run_id: str) -> RunRecord:
        while True:
            run = await self.runner.store.call(self.runner.store.get_run, run_id)
            if run is None or run.status in TERMINAL:
                assert run is not None
                return run
            await asyncio.sleep(0.2)

    def _render(self, run: RunRecord) -> str:
        if run.status == "completed" and run.result is not None:
            return child_result_text(run.result)
        error = run.error or {}
        problems = error.get("validation_errors")
        lines = [
            f"child session {run.session_id} ({run.agent_name}) {run.status}: "
            f"[{error.get('type', run.status)}] {error.get('message', '')}"
        ]
        if isinstance(problems, list):
            lines += [f"- {problem}" for problem in problems]
        raise ToolExecutionError("\n".join(lines), tool=self.name)
