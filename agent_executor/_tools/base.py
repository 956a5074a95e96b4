"""The input-tool interface, :class:`InputTool`, and helpers for describing arguments."""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar

from pydantic import JsonValue

from agent_contracts._errors import ToolExecutionError
from agent_core._compiled_schema import compile_schema
from agent_core._json_text import encodable
from agent_executor._providers.base import JsonObject, ToolDefinition

RUN_DEADLINE: ContextVar[float | None] = ContextVar("agentshape_run_deadline", default=None)
"""When the current run must end (``time.monotonic()``), set by the run loop for its timeout.

A tool runs in a worker thread that a timed-out run cannot stop, so the fs tools stop at this
deadline themselves (the context is copied into the thread)."""


def tool_deadline(seconds: float) -> float:
    """Return the deadline of a tool call: ``seconds`` from now, or the run's end if sooner."""
    own = time.monotonic() + seconds
    run = RUN_DEADLINE.get()
    return own if run is None else min(own, run)


class InputTool(ABC):
    """A tool the model can call to look something up, in neutral form.

    A subclass passes its ``name``, ``description`` and ``parameters`` (the JSON Schema object of
    its arguments) to this constructor and implements :meth:`execute`; :meth:`call` validates the
    arguments against ``parameters`` first and runs :meth:`execute` in a worker thread.

    Args:
        name: The tool's name, such as ``fs:read``.
        description: What the tool does, for the model.
        parameters: The Draft-7 JSON Schema of the tool's arguments (an object schema).

    Raises:
        InvalidSchemaError: ``parameters`` is not a valid JSON Schema.
    """

    def __init__(self, *, name: str, description: str, parameters: JsonObject) -> None:
        self.name = name
        """The tool's name, such as ``fs:read``."""
        self.description = description
        """What the tool does, for the model."""
        self.parameters = parameters
        """The JSON Schema of the tool's arguments."""
        self._schema = compile_schema(parameters, source=f"tool {name}")

    def definition(self) -> ToolDefinition:
        """Return the neutral :class:`ToolDefinition` a provider offers to the model."""
        return ToolDefinition(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def validate_arguments(self, arguments: JsonValue) -> dict[str, JsonValue]:
        """Check a call's arguments against :attr:`parameters`.

        Args:
            arguments: The parsed arguments of the call (``None`` counts as no arguments).

        Returns:
            The arguments as a JSON object.

        Raises:
            ToolExecutionError: The arguments are not an object or break the schema; ``errors``
                lists every problem.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolExecutionError(
                f"arguments must be a JSON object, not {type(arguments).__name__}", tool=self.name
            )
        issues = self._schema.issues(arguments)
        if issues:
            raise ToolExecutionError("invalid arguments", tool=self.name, errors=issues)
        return arguments

    async def call(self, arguments: JsonValue) -> str:
        """Validate the arguments and run the tool without blocking the event loop.

        Args:
            arguments: The parsed arguments of the model's call.

        Returns:
            The text to send back to the model; text UTF-8 cannot encode (a lone surrogate) is
            written as its backslash escape, so every model API accepts it.

        Raises:
            ToolExecutionError: The arguments are invalid or the tool failed.
        """
        checked = self.validate_arguments(arguments)
        try:
            return encodable(await asyncio.to_thread(self.execute, checked))
        except OSError as exc:
            raise ToolExecutionError(exc.strerror or type(exc).__name__, tool=self.name) from exc

    @abstractmethod
    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Run the tool on already validated arguments; it may block.

        Args:
            arguments: Arguments that satisfy :attr:`parameters`.

        Returns:
            The text to send back to the model.

        Raises:
            ToolExecutionError: The tool cannot do what was asked.
        """


def _arg(kind: str, description: str, **bounds: int) -> JsonObject:
    schema: JsonObject = {"type": kind, "description": description}
    schema.update(bounds)
    return schema


def _arguments(required: list[str], **properties: JsonObject) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _int_arg(arguments: dict[str, JsonValue], key: str) -> int | None:
    value = arguments.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str_arg(arguments: dict[str, JsonValue], key: str, default: str) -> str:
    value = arguments.get(key)
    return value if isinstance(value, str) else default


def _capped(requested: int | None, cap: int) -> int:
    return cap if requested is None else min(requested, cap)
