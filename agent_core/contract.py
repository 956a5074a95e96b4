"""The output contract a run enforces, resolved once from the agent and the request.

:func:`agent_core.contract_resolution.resolve_contract` picks and builds it.

A contract is a JSON Schema (checked against its draft's meta-schema and compiled once) or a
Pydantic class. Either way it judges a value the same way for every output mode: a list of
``ValidationIssue``, empty when the value meets it, and builds the typed output object.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, JsonValue

from agent_contracts.errors import NoJSONFoundError
from agent_contracts.messages import ToolCall
from agent_contracts.profiles import ProviderProfile
from agent_contracts.runs import JsonSchema, SchemaSource
from agent_contracts.tools import ResponseFormat, ToolDefinition
from agent_contracts.validation import ValidationIssue
from agent_core.bound_contract import BoundContract
from agent_core.dialects import Dialect
from agent_core.extract import extract_json
from agent_core.output_tool import OUTPUT_TOOL_NAME, OutputTool
from agent_core.output_validation import validate_as_json
from agent_core.schema_classes import build_accepted
from agent_core.verdict import CUT_OFF, Verdict
from agent_core.verdict import whole_reply_issue as _issue

logger = logging.getLogger(__name__)

__all__ = ["CUT_OFF", "BoundContract", "OutputContract", "Verdict"]


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
            errors = [_issue("null is not a result: send the result value itself", "type")]
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

        Returns:
            The verdict.
        """
        if cut_off:
            return Verdict(raw=text, errors=[_issue(CUT_OFF)], failure="output_truncated")
        try:
            value = json.loads(text)
        except ValueError:
            if not extract and not strict_json_only:
                return Verdict(
                    raw=text,
                    errors=[_issue("the reply is not valid JSON; send only the JSON value")],
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
                return Verdict(raw=text, errors=[_issue(exc.message)], failure="no_json_found")
            if strict_json_only:
                return Verdict(
                    raw=text,
                    value=best,
                    errors=[_issue(exc.message)],
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

        Returns:
            The verdict.
        """
        raw = call.raw_arguments or json.dumps(call.arguments)
        if call.arguments is not None or call.parse_error is None:
            return self.judge_value(raw, call.arguments, dialect)
        if cut_off:
            return Verdict(raw=raw, errors=[_issue(CUT_OFF)], failure="output_truncated")
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
            raw=raw, errors=[_issue(f"the arguments are not valid JSON: {call.parse_error}")]
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

        Returns:
            The verdict.
        """
        if extract and text.strip() and not cut_off:
            verdict = self.judge_text(
                text, dialect, extract=True, strict_json_only=strict_json_only
            )
            if verdict.ok:
                verdict.recovered = True
                return verdict
        if cut_off:
            return Verdict(raw=text, errors=[_issue(CUT_OFF, "tool")], failure="output_truncated")
        reason = "the reply was empty" if not text.strip() else "the model answered in text"
        return Verdict(
            raw=text,
            errors=[_issue(f"{reason} instead of calling {OUTPUT_TOOL_NAME}", "tool")],
            failure="output_tool_not_called",
        )
