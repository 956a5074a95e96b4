"""The output contract a run enforces: built, bound to a provider and judging each attempt.

:func:`resolve_contract` picks a run's :class:`OutputContract`: the agent's own contract, else the
caller's inline schema, a registered one, or the agent's ``default_output_schema``. A contract (a
JSON Schema or a Pydantic class) judges a value the same way in every output mode;
:meth:`OutputContract.bind` ties it to a provider's profile (:class:`BoundContract`), and each
judgement is a :class:`Verdict`. Contracts are cached per schema.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import cast

from pydantic import BaseModel, JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigError, NoJSONFoundError
from agent_contracts._messages import ToolCall
from agent_contracts._profiles import ProviderProfile
from agent_contracts._runs import JsonSchema, RunErrorType, SchemaSource
from agent_contracts._tools import ResponseFormat, ToolDefinition
from agent_contracts._validation import ValidationIssue
from agent_core._caches import SchemaCache, schema_cache
from agent_core._dialects import Dialect
from agent_core._extract import extract_json
from agent_core._output_tool import OUTPUT_TOOL_NAME, OutputTool, build_output_tool
from agent_core._output_validation import json_form, validate_as_json, validate_output
from agent_core._repetition import find_loop
from agent_core._schema_checks import ensure_output_schema
from agent_core._schema_model import build_accepted, compile_schema, model_from_schema, schema_hash

logger = logging.getLogger(__name__)

__all__ = [
    "CUT_OFF",
    "BoundContract",
    "OutputContract",
    "Verdict",
    "cut_off_issue",
    "resolve_contract",
    "whole_reply_issue",
]


CUT_OFF = (
    "the reply was cut off by the max_tokens limit before it was complete; "
    "send a shorter, complete answer"
)
"""The problem reported for a reply the ``max_tokens`` limit cut short (never recovered)."""


def cut_off_issue(raw: str) -> ValidationIssue:
    """Return the problem reported for a reply the ``max_tokens`` limit cut short.

    When the reply ends in a loop (one piece written over and over), the problem names the
    piece, so that the re-ask says what went wrong rather than only that the reply was long.

    Args:
        raw: The reply as the model sent it.
    """
    loop = find_loop(raw)
    if loop is None:
        return whole_reply_issue(CUT_OFF)
    piece = json.dumps(loop.piece, ensure_ascii=False)
    return whole_reply_issue(
        f"the reply repeated {piece} over and over until the max_tokens limit cut it off; "
        "write each value once, in a few words of your own, and close the JSON"
    )


def whole_reply_issue(message: str, keyword: str | None = None) -> ValidationIssue:
    """Return a problem with the reply as a whole (path ``$``).

    Args:
        message: What is wrong.
        keyword: The schema keyword or rule that failed, when there is one.
    """
    return ValidationIssue(path="$", message=message, keyword=keyword)


@dataclass
class Verdict:
    """One attempt's judgement: what the model sent, what it parsed to, what is wrong with it.

    Attributes:
        raw: Exactly what the model sent (tool arguments or reply text).
        value: The value judged, in the designer's shape; ``None`` when nothing parsed.
        errors: Every problem; empty when the value meets the contract.
        recovered: Whether the value had to be dug out of surrounding text.
        failure: The run error type this attempt would fail the run with.
    """

    raw: str
    value: JsonValue = None
    errors: list[ValidationIssue] = field(default_factory=list)
    recovered: bool = False
    failure: RunErrorType = "output_schema_validation_failed"

    @property
    def ok(self) -> bool:
        """Whether the attempt met the contract."""
        return not self.errors

    @staticmethod
    def merge(verdicts: list[Verdict]) -> Verdict:
        """Fold one turn's failed verdicts into one attempt, each error stated once.

        The raw output and value are the last schema failure's (the last verdict's when all
        are wrong-tool calls); the failure type is ``output_tool_not_called`` only when every
        verdict is one.
        """
        if len(verdicts) == 1:
            return verdicts[0]
        errors: list[ValidationIssue] = []
        for verdict in verdicts:
            errors += [e for e in verdict.errors if e not in errors]
        schema_failures = [v for v in verdicts if v.failure != "output_tool_not_called"]
        last = schema_failures[-1] if schema_failures else verdicts[-1]
        failure: RunErrorType = last.failure if schema_failures else "output_tool_not_called"
        return Verdict(raw=last.raw, value=last.value, errors=errors, failure=failure)


@dataclass(frozen=True)
class OutputContract:
    """The output contract of one run.

    Attributes:
        schema: The designer's JSON Schema (for a Pydantic class, its generated schema).
        model: The class ``result.output`` is an instance of.
        source: Where the contract came from (``agent``, ``inline``, ``named``, ``default``).
        hash: A stable hash of ``schema``, as logged in analytics.
        name: The registered name, when the schema came from the registry.
        tool: The ``submit_result`` tool built from the contract.
        lenient: Whether ``format`` is only an annotation.
    """

    schema: JsonSchema
    model: type[BaseModel]
    source: SchemaSource
    hash: str
    name: str | None
    tool: OutputTool
    lenient: bool
    _judge: Callable[[JsonValue], list[ValidationIssue]]
    _json_form: Callable[[JsonValue], JsonValue] | None = None  # a Pydantic class's dump
    _sent: dict[Dialect, ToolDefinition] = field(default_factory=dict, compare=False, repr=False)
    """``submit_result`` as each dialect is sent it, built once (building copies the schema)."""

    def issues(self, value: JsonValue) -> list[ValidationIssue]:
        """Return every problem ``value`` has against the contract (empty when it meets it)."""
        return self._judge(value)

    def build(self, value: JsonValue) -> BaseModel:
        """Return ``value`` (already judged valid) as an instance of :attr:`model`."""
        if self._json_form is None:
            return build_accepted(self.model, value)
        return validate_as_json(self.model, value)

    def bind(self, profile: ProviderProfile) -> BoundContract:
        """Return this contract bound to a provider's profile, once per run.

        Args:
            profile: The profile of the provider the run calls.
        """
        return BoundContract(self, profile)

    def tool_definition(self, dialect: Dialect) -> ToolDefinition:
        """Return ``submit_result`` compiled for a dialect.

        Args:
            dialect: The tool dialect (``openai``, ``anthropic`` or ``neutral``).
        """
        if (sent := self._sent.get(dialect)) is not None:
            return sent
        if dialect == "anthropic":
            tool = self.tool.anthropic_tool()
            parameters = tool["input_schema"]
            strict = bool(tool.get("strict", False))
        else:
            function = self.tool.openai_tool(strict=dialect == "openai")["function"]
            assert isinstance(function, dict)
            parameters = function["parameters"]
            strict = bool(function["strict"])
        assert isinstance(parameters, dict)
        self._sent[dialect] = ToolDefinition(
            name=self.tool.name,
            description=self.tool.description,
            parameters=parameters,
            strict=strict,
        )
        return self._sent[dialect]

    def response_format(self, dialect: Dialect) -> ResponseFormat:
        """Return the native structured-output request for a dialect.

        Args:
            dialect: The tool dialect of the provider.

        Raises:
            ConfigError: The schema cannot be used with the provider's native structured output.
        """
        if dialect == "anthropic":
            schema = self.tool.anthropic_output_format()["schema"]
            strict = True
        else:
            spec = self.tool.openai_response_format()["json_schema"]
            assert isinstance(spec, dict)
            schema = spec["schema"]
            strict = bool(spec["strict"]) and dialect == "openai"
            if not strict:
                schema = self.tool.parameters
        assert isinstance(schema, dict)
        return ResponseFormat(name=self.tool.name, json_schema=schema, strict=strict)

    def unwrap(self, value: JsonValue, dialect: Dialect) -> JsonValue:
        """Map the provider's arguments back to a value for the designer's schema."""
        return self.tool.unwrap(value, dialect)

    def judge_value(self, raw: str, value: JsonValue, dialect: Dialect) -> Verdict:
        """Judge a parsed answer (in the provider's shape) against the contract.

        Args:
            raw: Exactly what the model sent.
            value: The parsed arguments or reply, unwrapped here for the designer's schema.
            dialect: The dialect the answer came in (to unwrap it).

        Returns:
            The verdict; ``null`` is never a result, even when the schema would allow it.
        """
        value = self.unwrap(value, dialect)
        errors = self.issues(value)
        if value is None and not errors:  # a run's result_data cannot be null
            errors = [
                whole_reply_issue("null is not a result: send the result value itself", "type")
            ]
        if not errors and self._json_form is not None:
            value = self._json_form(value)  # "3" judged as an int is the result 3
        return Verdict(raw=raw, value=value, errors=errors)

    def _fits(self, dialect: Dialect) -> Callable[[JsonValue], bool]:
        return lambda value: not self.issues(self.unwrap(value, dialect))

    def judge_text(
        self,
        text: str,
        dialect: Dialect,
        *,
        extract: bool,
        strict_json_only: bool,
        cut_off: bool = False,
    ) -> Verdict:
        """Judge a reply whose text should hold the answer as JSON.

        The whole reply is parsed first; otherwise (with ``extract`` or ``strict_json_only``)
        ``extract_json`` looks for a value that meets the contract, and the verdict says it was
        recovered. A reply with no JSON value fails as ``no_json_found``; text around the JSON
        under ``strict_json_only`` fails as ``strict_json_only_violated``; a value that breaks
        the contract as ``output_schema_validation_failed``.

        Args:
            text: The reply text.
            dialect: The dialect the answer came in.
            extract: Dig the JSON out of surrounding prose or fences.
            strict_json_only: The reply must be the JSON value alone.
            cut_off: The reply was cut short by ``max_tokens`` (it is then never recovered).
        """
        if cut_off:
            return Verdict(raw=text, errors=[cut_off_issue(text)], failure="output_truncated")
        try:
            value = json.loads(text)
        except ValueError:
            if not extract and not strict_json_only:
                return Verdict(
                    raw=text,
                    errors=[
                        whole_reply_issue("the reply is not valid JSON; send only the JSON value")
                    ],
                    failure="no_json_found",
                )
        else:
            return self.judge_value(text, value, dialect)
        try:
            value = extract_json(
                text,
                self.schema,
                strict_json_only=strict_json_only,
                is_valid=self._fits(dialect),
            )
        except NoJSONFoundError as exc:
            # No valid value in the text: judge the best candidate, so the model hears what is
            # wrong with it, or say why there was none.
            try:
                best = extract_json(text, None)
            except NoJSONFoundError:
                return Verdict(
                    raw=text, errors=[whole_reply_issue(exc.message)], failure="no_json_found"
                )
            if strict_json_only:
                return Verdict(
                    raw=text,
                    value=best,
                    errors=[whole_reply_issue(exc.message)],
                    failure="strict_json_only_violated",
                )
            return self.judge_value(text, best, dialect)
        verdict = self.judge_value(text, value, dialect)
        verdict.recovered = True
        return verdict

    def judge_call(
        self, call: ToolCall, dialect: Dialect, *, extract: bool, cut_off: bool = False
    ) -> Verdict:
        """Judge one ``submit_result`` call's arguments against the contract.

        Arguments that are not JSON are first recovered with ``extract_json`` (when ``extract``
        is on); the recovery counts only when the value then meets the contract, and the verdict
        says so. Arguments cut off by ``max_tokens`` are never recovered.

        Args:
            call: The tool call.
            dialect: The dialect the answer came in.
            extract: Try to recover arguments that are not valid JSON.
            cut_off: The reply was cut short by ``max_tokens``.
        """
        raw = call.raw_arguments or json.dumps(call.arguments)
        if call.arguments is not None or call.parse_error is None:
            return self.judge_value(raw, call.arguments, dialect)
        if cut_off:
            return Verdict(raw=raw, errors=[cut_off_issue(raw)], failure="output_truncated")
        if extract:
            try:
                value = extract_json(raw, None, is_valid=self._fits(dialect))
            except NoJSONFoundError:
                pass
            else:
                verdict = self.judge_value(raw, value, dialect)
                verdict.recovered = verdict.ok
                if verdict.ok:
                    return verdict
        return Verdict(
            raw=raw,
            errors=[whole_reply_issue(f"the arguments are not valid JSON: {call.parse_error}")],
        )

    def judge_reply_without_tool(
        self,
        text: str,
        dialect: Dialect,
        *,
        extract: bool,
        strict_json_only: bool = False,
        cut_off: bool = False,
    ) -> Verdict:
        """Judge a reply that called no tool where ``submit_result`` was required.

        Some OpenAI-compatible servers ignore ``tool_choice`` and write the arguments as JSON
        text; with ``extract`` on, a valid value there is accepted (and marked recovered).
        Anything else fails as ``output_tool_not_called``.

        Args:
            text: The reply text.
            dialect: The dialect the answer came in.
            extract: Accept a valid JSON value found in the text.
            strict_json_only: Accept it only when the text is the JSON value alone.
            cut_off: The reply was cut short by ``max_tokens``.
        """
        if extract and text.strip() and not cut_off:
            verdict = self.judge_text(
                text, dialect, extract=True, strict_json_only=strict_json_only
            )
            if verdict.ok:
                verdict.recovered = True
                return verdict
        if cut_off:
            return Verdict(
                raw=text, errors=[whole_reply_issue(CUT_OFF, "tool")], failure="output_truncated"
            )
        reason = "the reply was empty" if not text.strip() else "the model answered in text"
        return Verdict(
            raw=text,
            errors=[whole_reply_issue(f"{reason} instead of calling {OUTPUT_TOOL_NAME}", "tool")],
            failure="output_tool_not_called",
        )


@dataclass(frozen=True)
class BoundContract:
    """An output contract bound to one provider's profile: what one run sends and judges.

    Attributes:
        contract: The contract.
        profile: The provider's profile (its tool dialect, strict tools, native output).
    """

    contract: OutputContract
    profile: ProviderProfile

    @property
    def schema(self) -> JsonSchema:
        """The designer's schema."""
        return self.contract.schema

    @property
    def dialect(self) -> Dialect:
        """The dialect this provider is sent: its own when it takes strict tools, else neutral."""
        return self.profile.tool_dialect if self.profile.strict_tools else "neutral"

    def tool_definition(self) -> ToolDefinition:
        """Return ``submit_result`` as this provider is sent it."""
        return self.contract.tool_definition(self.dialect)

    def response_format(self) -> ResponseFormat:
        """Return the native structured-output request for this provider.

        Raises:
            ConfigError: The provider has no native structured output, or the schema cannot be
                used with it.
        """
        if not self.profile.native_output:
            raise ConfigError(
                "this provider's profile has no native structured output (native_output is "
                "false); use output_mode 'tool' or 'prompted', or override the profile"
            )
        return self.contract.response_format(self.dialect)

    def judge_text(
        self, text: str, *, extract: bool, strict_json_only: bool, cut_off: bool = False
    ) -> Verdict:
        """Judge a reply whose text should hold the answer as JSON (see the contract's)."""
        return self.contract.judge_text(
            text,
            self.dialect,
            extract=extract,
            strict_json_only=strict_json_only,
            cut_off=cut_off,
        )

    def judge_call(self, call: ToolCall, *, extract: bool, cut_off: bool = False) -> Verdict:
        """Judge one ``submit_result`` call's arguments (see the contract's)."""
        return self.contract.judge_call(call, self.dialect, extract=extract, cut_off=cut_off)

    def judge_reply_without_tool(
        self, text: str, *, extract: bool, strict_json_only: bool = False, cut_off: bool = False
    ) -> Verdict:
        """Judge a reply that called no tool where ``submit_result`` was required."""
        return self.contract.judge_reply_without_tool(
            text,
            self.dialect,
            extract=extract,
            strict_json_only=strict_json_only,
            cut_off=cut_off,
        )


_contracts: SchemaCache[tuple[str, SchemaSource, str | None, bool], OutputContract]
_contracts = schema_cache("agent_core.contracts", 256)


def _for_schema(
    schema: JsonSchema, source: SchemaSource, name: str | None, lenient: bool, where: str
) -> OutputContract:
    """Build (once per schema) the contract: compile, check, model, and the output tool."""
    compiled = compile_schema(schema, lenient=lenient, source=where)
    key = (compiled.hash, source, name, lenient)
    cached = _contracts.get(key)
    if cached is not None:
        return cached
    for finding in ensure_output_schema(schema, source=where):
        logger.warning("%s: %s: %s", where, finding.path, finding.message)
    model = model_from_schema(schema, name="Output", lenient=lenient, source=where)
    contract = OutputContract(
        schema=schema,
        model=model,
        source=source,
        hash=compiled.hash,
        name=name,
        tool=build_output_tool(schema),
        lenient=lenient,
        _judge=compiled.issues,
    )
    _contracts.put(key, contract)
    return contract


def _for_class(model: type[BaseModel], lenient: bool) -> OutputContract:
    schema = cast(dict[str, JsonValue], model.model_json_schema())

    def judge(value: JsonValue) -> list[ValidationIssue]:
        return validate_output(value, model, lenient=lenient)

    return OutputContract(
        schema=schema,
        model=model,
        source="agent",
        hash=schema_hash(schema),
        name=model.__name__,
        tool=build_output_tool(model),
        lenient=lenient,
        _judge=judge,
        _json_form=None if hasattr(model, "agentshape_compiled") else partial(json_form, model),
    )


def resolve_contract(
    config: AgentConfig,
    *,
    output_type: type[BaseModel] | None,
    inline: JsonSchema | None,
    named: tuple[str, JsonSchema] | None,
    lenient: bool,
) -> OutputContract | None:
    """Pick the run's contract: the agent's own, else inline, else named, else the default.

    Args:
        config: The agent.
        output_type: A Pydantic class given as the agent's contract in Python.
        inline: The caller's inline schema for this run.
        named: The caller's registered schema for this run, as ``(name, schema)``.
        lenient: Treat ``format`` as an annotation only.

    Returns:
        The contract, or ``None`` for a run that returns free text.

    Raises:
        ConfigError: The caller tried to replace the agent's own output contract.
        InvalidSchemaError: The chosen schema is not valid under its draft.
        SchemaReferenceError: The chosen schema has a ``$ref`` that does not resolve offline.
    """
    caller = "an inline output schema" if inline is not None else "a named output schema"
    if output_type is not None or config.output_schema is not None:
        if inline is not None or named is not None:
            raise ConfigError(
                f"agent {config.id!r} has its own output contract, which a caller cannot "
                f"override; this run gave {caller}. Drop it, or give the agent a "
                "default_output_schema instead of an output_schema if callers should choose."
            )
        if output_type is not None:
            return _for_class(output_type, lenient)
        assert config.output_schema is not None
        where = f"agent {config.id!r} output_schema"
        return _for_schema(config.output_schema, "agent", None, lenient, where)
    if inline is not None:
        return _for_schema(inline, "inline", None, lenient, "inline output schema")
    if named is not None:
        name, schema = named
        return _for_schema(schema, "named", name, lenient, f"schema {name!r}")
    if config.default_output_schema is not None:
        where = f"agent {config.id!r} default_output_schema"
        return _for_schema(config.default_output_schema, "default", None, lenient, where)
    return None
