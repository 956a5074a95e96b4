"""How a run enforces its contract: :class:`RunOptions`, their layers and environment defaults.

Options come in layers: environment defaults, then the agent's options, then the run's own;
:func:`merge_options` combines them.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_contracts._errors import ConfigError

__all__ = [
    "ENV_EXTRACT_JSON",
    "ENV_MAX_RETRIES",
    "ENV_VALIDATION_MODE",
    "OutputMode",
    "RunOptions",
    "ValidationMode",
    "merge_options",
    "no_options",
    "options_from_env",
]

OutputMode = Literal["tool", "native", "prompted", "text"]
"""How the output is asked for: the ``submit_result`` tool, the provider's native structured
output, a schema in the prompt with JSON read from the text, or plain text (no contract)."""

ENV_MAX_RETRIES = "SCHEMA_ENFORCEMENT_MAX_RETRIES"
"""Environment variable with the default ``max_retries`` (read by the executor)."""

ENV_EXTRACT_JSON = "SCHEMA_ENFORCEMENT_EXTRACT_JSON"
"""Environment variable with the default ``extract_json`` (read by the executor)."""

ENV_VALIDATION_MODE = "SCHEMA_ENFORCEMENT_VALIDATION_MODE"
"""Environment variable with the default ``validation_mode`` (read by the executor)."""

ValidationMode = Literal["strict", "lenient"]
"""How ``format`` is read: ``strict`` asserts the formats it knows and fails unknown ones;
``lenient`` reads it as an annotation. The same setting as ``lenient_formats``."""

_MODES: dict[str, bool] = {"strict": False, "lenient": True}


class RunOptions(BaseModel):
    """How strictly and how persistently a run enforces its output contract."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_retries: int = Field(default=1, ge=0)
    """Re-prompts after a failed attempt (one by default: two attempts in all)."""
    extract_json: bool = True
    """Recover a JSON value from surrounding prose or code fences in a text reply."""
    strict_json_only: bool = False
    """Treat any text around the JSON value as a failed attempt."""
    output_mode: OutputMode | None = None
    """How to ask for the output; ``None`` lets the executor choose for the provider."""
    token_budget: int | None = Field(default=None, ge=1)
    """Most tokens (input plus output) the whole run may spend; ``None`` for no limit."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Most seconds the whole run may take; ``None`` for the default of 300 s (or three
    ``request_timeout_s``, if longer), so that a hung endpoint cannot hold a run for minutes."""
    request_timeout_s: float | None = Field(default=None, gt=0)
    """Most seconds one model request may take (each of the SDK's bounded retries gets as
    long); ``None`` keeps the provider's default (120 s for the SDK providers). A local model
    on a CPU can need minutes a call."""
    lenient_formats: bool = False
    """Treat unknown or unchecked ``format`` values as annotations instead of failing them."""
    validation_mode: ValidationMode = "strict"
    """Another name for ``lenient_formats``: ``strict`` (the default) or ``lenient``. Giving
    either sets both; giving both with different meanings is an error."""

    @model_validator(mode="before")
    @classmethod
    def _pair_validation_mode(cls, data: object) -> object:
        """Set ``validation_mode`` and ``lenient_formats`` together, so layers merge as one."""
        if not isinstance(data, Mapping):
            return data
        mode = data.get("validation_mode")
        lenient = data.get("lenient_formats")
        if mode is None and lenient is None:
            return data
        if mode is not None and lenient is not None:
            if _MODES.get(str(mode)) is not lenient:
                raise ValueError(
                    f"validation_mode {mode!r} contradicts lenient_formats {lenient!r}; give one"
                )
            return data
        if mode is not None:
            if mode not in _MODES:
                return data  # the field's own check names the allowed values
            return {**data, "lenient_formats": _MODES[mode]}
        if not isinstance(lenient, bool):
            return data  # the field's own check says it is not a boolean
        return {**data, "validation_mode": "lenient" if lenient else "strict"}


_NO_OPTIONS = RunOptions()


def no_options() -> RunOptions:
    """Return the one empty options layer (sets nothing): what a request that gives none has.

    Returns:
        The shared empty :class:`RunOptions`.
    """
    return _NO_OPTIONS


def merge_options(*layers: RunOptions | None) -> RunOptions:
    """Combine option layers, lowest precedence first: ``merge_options(env, agent, run)``.

    A layer overrides a field only if it set it explicitly (the field is in its
    ``model_fields_set``) to a value other than ``None``; otherwise the field falls through to the
    layers below, and finally to the field's default. ``None`` layers are skipped. The result has
    every field set, so it overrides everything if used as a layer itself.

    Args:
        *layers: Option layers, from the lowest precedence (environment defaults) to the highest
            (the run's own options).

    Returns:
        The resolved options (options are frozen, so the same layers give the same object).
    """
    key = tuple(map(id, layers))
    known = _merged.get(key)
    if known is not None and all(map(operator.is_, known[0], layers)):  # same length: same key
        return known[1]
    merged = _merge(layers)
    if len(_merged) >= _MERGED_KEPT:
        _merged.clear()
    _merged[key] = (layers, merged)
    return merged


_MERGED_KEPT = 256
_merged: dict[tuple[int, ...], tuple[tuple[RunOptions | None, ...], RunOptions]] = {}
"""Merged options by the identity of their layers (kept with them, so an id is not reused)."""


def _merge(layers: tuple[RunOptions | None, ...]) -> RunOptions:
    """Merge ``layers`` (see :func:`merge_options`)."""
    chosen: dict[str, object] = {}
    for layer in layers:
        if layer is None:
            continue
        for name in layer.model_fields_set:
            value = getattr(layer, name)
            if value is not None:
                chosen[name] = value
    resolved = RunOptions.model_validate(chosen)
    # Every field marked set, so the result overrides everything as a layer (already checked).
    return RunOptions.model_construct(_fields_set=set(RunOptions.model_fields), **resolved.__dict__)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def options_from_env(env: Mapping[str, str]) -> RunOptions:
    """Read the environment-default option layer from a mapping such as ``os.environ``.

    Only ``SCHEMA_ENFORCEMENT_MAX_RETRIES``, ``SCHEMA_ENFORCEMENT_EXTRACT_JSON`` and
    ``SCHEMA_ENFORCEMENT_VALIDATION_MODE`` are read; an unset or empty variable leaves its field
    unset, so it falls through in ``merge_options``.

    Args:
        env: The environment to read (the caller passes ``os.environ``; this function reads
            nothing itself).

    Returns:
        A layer with only the variables that were given set.

    Raises:
        ConfigError: A variable holds something that is not a whole number >= 0, a boolean or
            a validation mode (``strict``, ``lenient``).
    """
    retries, extract = env.get(ENV_MAX_RETRIES, ""), env.get(ENV_EXTRACT_JSON, "")
    return _env_layer(retries, extract, env.get(ENV_VALIDATION_MODE, ""))


@functools.lru_cache(maxsize=64)
def _env_layer(retries: str, extract: str, mode: str) -> RunOptions:
    """Return the environment layer for the variables' values (read once per combination)."""
    values: dict[str, object] = {}
    retries = retries.strip()
    if retries:
        if not retries.isdigit():
            raise ConfigError(f"{ENV_MAX_RETRIES} must be a whole number >= 0, got {retries!r}")
        values["max_retries"] = int(retries)
    given = extract
    extract = extract.strip().lower()
    if extract:
        if extract not in _TRUE | _FALSE:
            raise ConfigError(
                f"{ENV_EXTRACT_JSON} must be true or false (or 1/0, yes/no, on/off), got {given!r}"
            )
        values["extract_json"] = extract in _TRUE
    given = mode
    mode = mode.strip().lower()
    if mode:
        if mode not in _MODES:
            raise ConfigError(f"{ENV_VALIDATION_MODE} must be strict or lenient, got {given!r}")
        values["validation_mode"] = mode
    return RunOptions.model_validate(values)
