"""What ``Agent.run`` returns: :class:`AgentResult`, a run's result with its typed output.

Every field of the run's :class:`~agent_contracts._runs.RunResult` is a typed property here, so a
program that reads ``result.result_data`` or ``result.retries`` type-checks under
``mypy --strict``; ``result.result`` is the serialisable ``RunResult`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, Literal, Protocol

from pydantic import BaseModel, JsonValue
from typing_extensions import TypeVar

from agent_contracts._errors import ConfigError, OutputSchemaValidationError, RunFailedError
from agent_contracts._messages import Message, Usage
from agent_contracts._runs import (
    Attempt,
    RunError,
    RunResult,
    RunStatus,
    SchemaSource,
    SchemaValidation,
)
from agent_core._json_text import dump_json

__all__ = ["AgentResult", "Outcome", "OutputT", "format_child_result"]

OutputT = TypeVar("OutputT", bound=BaseModel, default=BaseModel)
"""The class of an agent's typed output (``BaseModel`` when the agent has no Pydantic class)."""


class Outcome(Protocol):
    """A finished run whose result may be built on first read (``RunOutcome``)."""

    @property
    def result(self) -> RunResult:
        """The run's result (the same object on every read)."""
        ...

    @property
    def error(self) -> RunError | None:
        """Why the run failed (``None`` when it completed), as ``result`` says."""
        ...


class _Given:
    """An outcome whose result is already built."""

    __slots__ = ("error", "result")

    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.error = result.error


class AgentResult(Generic[OutputT]):
    """A run's result (``.result``, a ``RunResult``) with the typed output object.

    Args:
        result: The run's serialisable result.
        output: The validated output as an instance of the contract's class, or ``None``.
    """

    def __init__(self, result: RunResult, output: OutputT | None) -> None:
        self._outcome: Outcome = _Given(result)
        self._error = result.error
        self._output = output

    @classmethod
    def deferred(cls, outcome: Outcome, output: OutputT | None) -> AgentResult[OutputT]:
        """Return the result of a run whose ``RunResult`` is built when first read.

        A program that reads only :attr:`output` (or :attr:`ok`, :attr:`error`) never pays
        for building it.

        Args:
            outcome: The run's outcome (its ``result`` is read, once, on first need).
            output: The validated output as an instance of the contract's class, or ``None``.
        """
        made = cls.__new__(cls)
        made._outcome, made._error, made._output = outcome, outcome.error, output
        return made

    @property
    def result(self) -> RunResult:
        """The run's serialisable result (built on first read for a deferred one).

        Raises:
            pydantic.ValidationError: A bug of ours left a field of the result unusable.
        """
        return self._outcome.result

    def __repr__(self) -> str:
        return f"AgentResult(status={self.status!r}, run_id={self.result.run_id!r})"

    @property
    def ok(self) -> bool:
        """Whether the run completed."""
        return self._error is None

    @property
    def status(self) -> RunStatus:
        """``completed`` or ``failed``."""
        return "completed" if self._error is None else "failed"

    @property
    def error(self) -> RunError | None:
        """Why the run failed, or ``None``."""
        return self._error

    @property
    def result_data(self) -> JsonValue | None:
        """The value that met the contract, for a completed run with one; else ``None``."""
        return self.result.result_data

    @property
    def result_text(self) -> str | None:
        """The model's text answer, for a completed run without a contract; else ``None``."""
        return self.result.result_text

    @property
    def attempts(self) -> list[Attempt]:
        """Every attempt, in order, each with its raw output and problems."""
        return self.result.attempts

    @property
    def retries(self) -> int:
        """Re-prompts made (attempts after the first)."""
        return self.result.retries

    @property
    def usage(self) -> Usage:
        """Tokens and requests the whole run spent."""
        return self.result.usage

    @property
    def duration_ms(self) -> float:
        """Wall time of the whole run, in milliseconds."""
        return self.result.duration_ms

    @property
    def transcript(self) -> list[Message]:
        """The whole conversation, resumable through ``RunRequest.messages``."""
        return self.result.transcript

    @property
    def run_id(self) -> str | None:
        """The run's id, shared with its analytics events."""
        return self.result.run_id

    @property
    def agent_id(self) -> str | None:
        """The agent that ran."""
        return self.result.agent_id

    @property
    def model(self) -> str | None:
        """The model that produced the final attempt, such as ``openai:gpt-4.1-mini``."""
        return self.result.model

    @property
    def model_tier(self) -> int:
        """0 for the agent's own model, ``n`` for its ``n``-th escalation tier."""
        return self.result.model_tier

    @property
    def schema_hash(self) -> str | None:
        """A stable hash of the output schema enforced; ``None`` without a contract."""
        return self.result.schema_hash

    @property
    def schema_name(self) -> str | None:
        """The registered name of the output schema, when it came from the registry."""
        return self.result.schema_name

    @property
    def schema_source(self) -> SchemaSource | None:
        """Where the output schema came from; ``None`` without a contract."""
        return self.result.schema_source

    @property
    def schema_validation(self) -> SchemaValidation | None:
        """``valid``, ``schema_name`` and ``retry_count``; ``None`` without a contract."""
        return self.result.schema_validation

    @property
    def recovered_by_extraction(self) -> bool:
        """Whether the final value had to be dug out of prose or a code fence."""
        return self.result.recovered_by_extraction

    @property
    def output(self) -> OutputT:
        """The validated output as an instance of the contract's class.

        Raises:
            OutputSchemaValidationError: The output broke the schema after every retry.
            RunFailedError: The run failed otherwise (carries the error type, problems and
                last output).
            ConfigError: The run had no output contract (read ``result_text`` instead).
        """
        self.raise_for_status()
        if self._output is None:
            raise ConfigError("this run had no output contract; its answer is in result_text")
        return self._output

    def raise_for_status(self) -> None:
        """Raise :class:`RunFailedError` when the run failed; do nothing when it completed.

        Raises:
            OutputSchemaValidationError: The output broke the schema after every retry.
            RunFailedError: The run failed otherwise.
        """
        error = self._error
        if error is not None:
            failed = (
                OutputSchemaValidationError
                if error.type == "output_schema_validation_failed"
                else RunFailedError
            )
            raise failed(
                error.message,
                type=error.type,
                errors=error.issues,
                last_output=error.last_output,
            )

    def model_dump(self, *, mode: Literal["json", "python"] = "json") -> dict[str, Any]:
        """Return the run's result as a dict (``schema_validation`` included).

        Args:
            mode: ``json`` for JSON-ready values (the default), ``python`` for Python objects.
        """
        return self.result.model_dump(mode=mode)

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """Return the run's result as JSON text (``schema_validation`` included).

        Text that UTF-8 cannot encode (a lone surrogate in a model's answer) is written as its
        JSON escape, so the text always encodes and reads back to the same value.

        Args:
            indent: Indent nested values by this many spaces; ``None`` for one line.
        """
        return dump_json(self.result.model_dump(mode="json"), indent=indent)


def format_child_result(
    result: RunResult | AgentResult[Any] | Mapping[str, JsonValue],
) -> str:
    """Render a child run's result for its parent agent.

    ``result_data`` as indented JSON when present, otherwise ``result_text``, otherwise
    ``(No result available)``.

    Args:
        result: A run result, an agent result, or a result as a JSON mapping.

    Returns:
        The text the parent receives.
    """
    if isinstance(result, AgentResult):
        result = result.result
    if isinstance(result, RunResult):
        return result.as_text()
    data = result.get("result_data")
    if data is not None:
        return dump_json(data, indent=2)
    text = result.get("result_text")
    return text if isinstance(text, str) and text else "(No result available)"
