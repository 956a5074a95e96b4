"""One run of an agent: the options, the request, each attempt, and the result or failure.

A run either completes with exactly one of ``result_text`` (no output contract) or ``result_data``
(a value that met the contract), or fails with a typed ``RunError`` that keeps the last output.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    computed_field,
    field_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from agent_contracts._json_data import JsonData
from agent_contracts._messages import Message, Usage
from agent_contracts._options import (
    ENV_EXTRACT_JSON,
    ENV_MAX_RETRIES,
    ENV_VALIDATION_MODE,
    OutputMode,
    RunOptions,
    ValidationMode,
    merge_options,
    no_options,
    options_from_env,
)
from agent_contracts._validation import ValidationIssue

__all__ = [
    "ENV_EXTRACT_JSON",
    "ENV_MAX_RETRIES",
    "ENV_VALIDATION_MODE",
    "RUN_ERROR_TYPES",
    "Attempt",
    "JsonSchema",
    "OutputMode",
    "RunError",
    "RunErrorType",
    "RunOptions",
    "RunProgress",
    "RunRequest",
    "RunResult",
    "RunStatus",
    "SchemaSource",
    "SchemaValidation",
    "ValidationMode",
    "merge_options",
    "no_options",
    "options_from_env",
]

_SCHEMA_OBJECT: TypeAdapter[dict[str, JsonValue]] = TypeAdapter(dict[str, JsonValue])


def _check_json_schema(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    """Accept a JSON object or a boolean, with one clear error for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return _SCHEMA_OBJECT.validate_python(value)
    raise PydanticCustomError(
        "json_schema_type",
        "a JSON Schema is an object or a boolean, not {kind}",
        {"kind": type(value).__name__},
    )


JsonSchema = Annotated[dict[str, JsonValue] | bool, WrapValidator(_check_json_schema)]
"""A JSON Schema as data: an object, or ``true``/``false``. Not meta-validated here."""

RunStatus = Literal["completed", "failed"]
"""How a run ended."""

SchemaSource = Literal["agent", "inline", "named", "default"]
"""Where the run's output schema came from: the agent's fixed ``output_schema``, the request's
inline schema, a named schema from the registry, or the agent's ``default_output_schema``."""

RunErrorType = Literal[
    "output_schema_validation_failed",
    "output_tool_not_called",
    "no_json_found",
    "strict_json_only_violated",
    "output_truncated",
    "input_validation_failed",
    "invalid_schema",
    "schema_not_found",
    "token_budget_exceeded",
    "run_timeout",
    "max_steps_exceeded",
    "tool_error",
    "mcp_server_error",
    "config_error",
    "provider_rate_limited",
    "provider_timeout",
    "provider_connection_error",
    "provider_authentication_error",
    "provider_permission_denied",
    "provider_not_found",
    "provider_bad_request",
    "provider_context_length_exceeded",
    "provider_server_error",
    "provider_batch_failed",
    "provider_batch_item_failed",
    "provider_batch_item_expired",
    "provider_error",
    "internal_error",
]
"""Every reason a run can fail. ``provider_*`` match ``ProviderError.kind``."""

RUN_ERROR_TYPES: tuple[str, ...] = get_args(RunErrorType)
"""The values of ``RunErrorType``, in declaration order."""


class RunRequest(BaseModel):
    """What one run is asked to do.

    At most one of ``output_schema`` (inline) and ``schema_name`` (from the registry) is given.
    Neither replaces an agent's fixed ``output_schema``; both replace its ``default_output_schema``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task: str
    """The user's task, sent as the first user message."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """Input values, validated against the agent's ``parameters_schema``."""
    output_schema: JsonSchema | None = None
    """An inline output schema for this run only."""
    schema_name: str | None = None
    """The name of a registered output schema for this run."""
    named_schema: JsonSchema | None = None
    """The content of ``schema_name`` as the caller fixed it (a service keeps what a session
    started with); ``None`` reads it from the registry."""
    options: RunOptions = Field(default_factory=no_options)
    """This run's options; fields it does not set fall through to the agent and environment."""
    messages: list[Message] = Field(default_factory=list)
    """An earlier conversation to resume (the transcript of a previous run), oldest first."""
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    """The id the run's result and analytics events carry (a service passes its own, so the
    two match); ``None`` makes a new one. An escalated tier ``n`` gets ``<run_id>.tier<n>``."""
    progress: RunProgress | None = None
    """The model turns this run already finished (a run taken over after its worker died):
    the run continues after the last of them instead of starting again. ``None``: a new run."""

    @model_validator(mode="after")
    def _one_schema_source(self) -> RunRequest:
        if self.output_schema is not None and self.schema_name is not None:
            raise PydanticCustomError(
                "conflicting_schemas",
                "give an inline output_schema or a schema_name, not both",
            )
        if self.named_schema is not None and self.schema_name is None:
            raise PydanticCustomError(
                "named_schema_without_name", "named_schema is the content of a schema_name"
            )
        return self

    @field_serializer("options")
    def _dump_set_options(self, options: RunOptions) -> dict[str, JsonValue]:
        """Dump only the options this request set, so it stays a layer after a round trip."""
        dumped: dict[str, JsonValue] = options.model_dump(mode="json", exclude_unset=True)
        return dumped


class Attempt(BaseModel):
    """One try at producing the output: the raw answer, what it parsed to, what was wrong."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int = Field(ge=1)
    """1 for the first attempt, 2 for the first retry, and so on."""
    mode: OutputMode
    """How the output was asked for in this attempt."""
    raw_output: str = ""
    """Exactly what the model sent: the tool arguments' text, or the reply text."""
    parsed: JsonData = None
    """The JSON value read from ``raw_output``; ``None`` when nothing parsed."""
    errors: list[ValidationIssue] = Field(default_factory=list)
    """Every problem found with this attempt; empty when it met the contract."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens spent on this attempt."""
    latency_ms: float = Field(default=0.0, ge=0)
    """Wall time the model took for this attempt, in milliseconds."""
    recovered_by_extraction: bool = False
    """Whether the JSON had to be dug out of prose or a code fence."""
    tool_name: str | None = None
    """The tool the model called to answer (``submit_result``), when it called one."""
    model: str | None = None
    """The model that made this attempt (it changes when a run escalates)."""

    @property
    def ok(self) -> bool:
        """Whether this attempt met the contract (no errors)."""
        return not self.errors


class RunProgress(BaseModel):
    """What a run has done so far: its finished model turns, to continue the run from.

    A run hands its progress to its ``on_turn`` recorder before each model call after the
    first; a later run of the same request given this progress (``RunRequest.progress``) sends
    the next model call as the first run would have, with the re-prompts already made counted
    against ``max_retries`` and the usage added up.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[Message] = Field(default_factory=list)
    """The conversation after the run's opening (system prompt, earlier transcript, task):
    each model reply, the tool results answering it, and any re-prompt, oldest first."""
    attempts: list[Attempt] = Field(default_factory=list)
    """Every attempt at the output so far."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and requests spent so far."""
    steps: int = Field(default=0, ge=0)
    """Model calls made so far."""
    last_output: JsonData = None
    """The last thing the model produced (kept for a failure)."""
    cannot_force: bool = False
    """The provider turned out unable to force a tool choice (written reminders stand in)."""
    model_tier: int = Field(default=0, ge=0)
    """The escalation tier these turns were made on."""


class RunError(BaseModel):
    """Why a run failed: its type, message and problems.

    ``validation_errors`` are ``"$.path: message"`` strings; ``issues`` holds the same
    problems as structured :class:`ValidationIssue` objects (path, message, keyword, schema
    path). Give either when building one: issues given as ``validation_errors`` are moved to
    ``issues`` and rendered, so the two always agree.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: RunErrorType
    """The kind of failure."""
    message: str
    """What went wrong, for a person."""
    validation_errors: list[str] = Field(default_factory=list)
    """The last attempt's problems as ``"$.path: message"`` strings, for validation failures."""
    issues: list[ValidationIssue] = Field(default_factory=list)
    """The same problems, structured: path, message, keyword and schema path."""
    last_output: JsonData = None
    """The last thing the model produced (parsed value or raw text), kept so nothing is lost."""

    @model_validator(mode="before")
    @classmethod
    def _issues_beside_strings(cls, data: object) -> object:
        """Render structured problems given as ``validation_errors`` as ``$.path: message``."""
        if not isinstance(data, dict) or "validation_errors" not in data:
            return data
        given = data["validation_errors"]
        if not isinstance(given, list) or all(isinstance(item, str) for item in given):
            return data
        issues = [
            item if isinstance(item, ValidationIssue) else ValidationIssue.model_validate(item)
            for item in given
        ]
        return {**data, "validation_errors": [str(i) for i in issues], "issues": issues}


class SchemaValidation(BaseModel):
    """Validation metadata for a result, as the result API reports it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    valid: bool
    """Whether the result met the schema."""
    schema_name: str | None
    """The registered name of the schema, when it had one."""
    retry_count: int
    """Re-prompts the run needed."""


class RunResult(BaseModel):
    """How a run ended, with everything needed to audit it.

    A completed run has exactly one of ``result_text`` (no contract) and ``result_data`` (the
    value that met the contract; never ``None``). A failed run has neither and carries ``error``,
    whose ``last_output`` keeps what the model last produced.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    status: RunStatus
    """``completed`` or ``failed``."""
    result_text: str | None = None
    """The model's text answer, for a run without an output contract."""
    result_data: JsonData = None
    """The validated value, for a run with an output contract."""
    error: RunError | None = None
    """Why the run failed; set exactly when ``status`` is ``failed``."""
    attempts: list[Attempt] = Field(default_factory=list)
    """Every attempt, in order."""
    retries: int = Field(default=0, ge=0)
    """Re-prompts made (attempts after the first)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and requests the whole run spent."""
    duration_ms: float = Field(default=0.0, ge=0)
    """Wall time of the whole run, in milliseconds."""
    transcript: list[Message] = Field(default_factory=list)
    """The whole conversation, resumable through ``RunRequest.messages``."""
    run_id: str | None = None
    """The run's id, shared with its analytics events."""
    agent_id: str | None = None
    """The agent that ran."""
    model: str | None = None
    """The model that produced the final attempt."""
    model_tier: int = Field(default=0, ge=0)
    """0 for the agent's own model, ``n`` for its ``n``-th escalation tier."""
    schema_hash: str | None = None
    """A stable hash of the output schema enforced; ``None`` when there was no contract."""
    schema_name: str | None = None
    """The registered name of the output schema, when it came from the registry."""
    schema_source: SchemaSource | None = None
    """Where the output schema came from; ``None`` when there was no contract."""
    recovered_by_extraction: bool = False
    """Whether the final value had to be dug out of prose or a code fence."""

    @model_validator(mode="after")
    def _result_xor_error(self) -> RunResult:
        has_text = self.result_text is not None
        has_data = self.result_data is not None
        if self.status == "completed":
            if has_text == has_data:
                got = "both" if has_text else "neither"
                raise PydanticCustomError(
                    "result_xor",
                    "a completed run has exactly one of result_text and result_data (got {got})",
                    {"got": got},
                )
            if self.error is not None:
                raise PydanticCustomError("result_xor", "a completed run has no error")
        else:
            if self.error is None:
                raise PydanticCustomError("result_xor", "a failed run needs an error")
            if has_text or has_data:
                raise PydanticCustomError(
                    "result_xor",
                    "a failed run has no result_text or result_data; "
                    "its last output belongs in error.last_output",
                )
        return self

    @property
    def ok(self) -> bool:
        """Whether the run completed."""
        return self.status == "completed"

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: object) -> object:
        """Accept a dump back: ``schema_validation`` is derived, so it is not read in."""
        if isinstance(data, dict) and "schema_validation" in data:
            return {key: value for key, value in data.items() if key != "schema_validation"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def schema_validation(self) -> SchemaValidation | None:
        """The result API's validation metadata, or ``None`` for a run without a contract.

        Included in ``model_dump`` and ``--json`` output: ``valid``, ``schema_name`` and
        ``retry_count``.
        """
        if self.schema_hash is None:
            return None
        return SchemaValidation(
            valid=self.result_data is not None,
            schema_name=self.schema_name,
            retry_count=self.retries,
        )

    def as_text(self) -> str:
        """Return the result as one text, the way a parent agent receives a child's result.

        ``result_data`` is rendered as indented JSON; otherwise ``result_text`` is returned, or
        ``(No result available)`` for a failed run.
        """
        if self.result_data is not None:
            return json.dumps(self.result_data, indent=2, ensure_ascii=False)
        return self.result_text if self.result_text is not None else "(No result available)"
