"""Reading a provider's reply: its usage, the turn it makes, and a model's tool-call arguments.

Shared by every provider's reply reader (``openai_replies``, ``anthropic``'s and the
streamed and batched paths): whatever a model sends as arguments becomes a value or a reason
the run loop re-prompts with, never an error of ours.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pydantic_core
from pydantic import JsonValue

from agent_contracts._json_data import PARSED_JSON
from agent_contracts._messages import Usage
from agent_core._json_text import MAX_JSON_DEPTH, read_checked_json, value_problem
from agent_executor._providers.base import ModelTurn

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "arguments_problem",
    "call_usage",
    "echo_text",
    "model_arguments",
    "parsed_turn",
    "read_json",
]


MAX_ARGUMENT_CHARS = 8 * 1024 * 1024
"""Longest tool-call arguments text read from a model (8 Mi characters); longer is refused."""


@functools.lru_cache(maxsize=1024)
def call_usage(input_tokens: int = 0, output_tokens: int = 0) -> Usage:
    """Return the usage of one model call; equal counts share one (frozen) ``Usage``.

    Returns:
        The usage (``requests`` is 1).
    """
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, requests=1)


def parsed_turn(**fields: Any) -> ModelTurn:
    """Return a ``ModelTurn`` whose ``raw`` body (and tool-call arguments) a JSON parser read.

    The body is taken as it is, without ``JsonValue``'s walk and copy; the other fields are
    checked as usual.

    Args:
        fields: The turn's fields, as for ``ModelTurn(...)``.

    Raises:
        pydantic.ValidationError: A field is not of its type.
    """
    return ModelTurn.model_validate(fields, context=PARSED_JSON)


def read_json(text: str | bytes) -> Any:  # typed as json.loads is
    """Parse JSON text as ``json.loads`` does, with pydantic-core's parser where it can.

    Pydantic's parser reads it first; text it refuses (an escaped lone surrogate, which
    Python's parser accepts) is read by ``json.loads``, which also gives the error for text
    that is not JSON.

    Returns:
        The value.

    Raises:
        ValueError: The text is not JSON (``json.JSONDecodeError``).
    """
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def model_arguments(raw: str) -> tuple[JsonValue, str | None]:
    """Parse a model's tool-call arguments text, within the bounds any JSON input gets.

    Whatever a model sends must become a contract failure the run loop re-prompts, never an
    error of ours: text that is not JSON, longer than :data:`MAX_ARGUMENT_CHARS`, nests past
    ``MAX_JSON_DEPTH``, holds ``NaN`` or an integer too long to read gives ``(None, why)``.
    ``why`` is the reason only (the re-prompt says what it is about), as ``parse_error`` holds.

    Args:
        raw: The arguments as the provider sent them (JSON text).

    Returns:
        ``(value, None)``, or ``(None, why)`` when the text cannot be used.
    """
    if len(raw) > MAX_ARGUMENT_CHARS:
        return None, f"{len(raw):,} characters is over the {MAX_ARGUMENT_CHARS:,}-character cap"
    checked = read_checked_json(raw)
    if checked is not None:
        return checked[0], None
    try:
        value: JsonValue = read_json(raw)
    except RecursionError:
        return None, f"it nests deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:
        return None, str(exc)
    problem = arguments_problem(value)
    return (None, problem) if problem else (value, None)


def arguments_problem(value: object) -> str | None:
    """Say why a model's already parsed tool-call arguments cannot be used, or ``None``.

    Args:
        value: The arguments as the SDK parsed them (an Anthropic ``input``).

    Returns:
        Why they cannot be used, or ``None`` when they can.
    """
    return value_problem(value)


def echo_text(arguments: object) -> str:
    """Return already parsed tool-call arguments as JSON text, whatever they hold.

    Used for ``raw_arguments`` when a provider sent the arguments as a value: nesting too deep
    to write, or ``NaN``, still give text (the arguments are refused, the text is kept).

    Args:
        arguments: The arguments as the SDK parsed them.

    Returns:
        The JSON text, or a cut ``repr`` when no JSON can be written.
    """
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return repr(arguments)[:10_000]
