"""Every error agentshape raises, in one small tree.

::

    AgentshapeError
    ├── ConfigError                 the developer's mistake: a bad config, option or call
    │   ├── ConfigFileError         a config file that cannot be read (names file, line, field)
    │   │   └── ConfigProblems      every problem found in one config file, reported at once
    │   ├── FleetProblems           every problem in a directory of agent configs, at once
    │   └── SchemaRegistryError     the named schema registry cannot do it (names the file)
    ├── SchemaError                 a JSON Schema that cannot be used
    │   ├── InvalidSchemaError      fails its draft's meta-schema (names the JSON path)
    │   ├── SchemaReferenceError    a ``$ref`` that does not resolve offline
    │   └── SchemaNotFoundError     no registered schema has that name (did you mean ...?)
    ├── OutputError                 a model's answer that is not the contract's shape
    │   ├── NoJSONFoundError        no complete JSON value in a free-text reply
    │   └── OutputValidationError   a value that breaks the schema (errors, last output)
    ├── InputValidationError        run parameters that break ``parameters_schema``
    ├── ToolExecutionError          an input tool call that failed (tool, message, errors)
    ├── ProviderError               a model provider failed (provider, status, body)
    └── RunFailedError              a failed run, raised on request (type, errors, last output)
        └── OutputSchemaValidationError  the output broke the schema after every retry

Errors carry their data in attributes; ``format_message`` renders them for people.
Pydantic's own ``ValidationError`` is never shadowed: ours is ``OutputValidationError``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from agent_contracts._validation import ValidationIssue

__all__ = [
    "AgentshapeError",
    "ConfigError",
    "ConfigFileError",
    "ConfigProblems",
    "FleetProblems",
    "InputValidationError",
    "InvalidSchemaError",
    "NoJSONFoundError",
    "OutputError",
    "OutputSchemaValidationError",
    "OutputValidationError",
    "ProviderError",
    "RunFailedError",
    "SchemaError",
    "SchemaNotFoundError",
    "SchemaReferenceError",
    "SchemaRegistryError",
    "ToolExecutionError",
]


class AgentshapeError(Exception):
    """Base of every error agentshape raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        """Return the error rendered for a person to read."""
        return self.message

    def __str__(self) -> str:
        return self.format_message()


class ConfigError(AgentshapeError):
    """A developer's mistake: an invalid agent config, option, or API call."""


class ConfigFileError(ConfigError):
    """A config file that cannot be loaded.

    Attributes:
        source: The file the problem is in.
        line: The 1-based line of the problem, when known.
        field: The dotted field the problem concerns, when known.
    """

    def __init__(
        self, message: str, *, source: str, line: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.field = field

    def format_message(self) -> str:
        """Return ``file:line: field: message``, omitting the parts that are unknown."""
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        if self.field:
            where = f"{where}: {self.field}"
        return f"{where}: {self.message}"


class ConfigProblems(ConfigFileError):
    """Every problem found in one config file, so all of them can be fixed in one pass.

    ``source``, ``line``, ``field`` and ``message`` are those of the first problem.

    Attributes:
        problems: Each problem, in line order (at least one).
    """

    def __init__(self, problems: Sequence[ConfigFileError]) -> None:
        if not problems:
            raise ValueError("ConfigProblems needs at least one problem")
        first = problems[0]
        super().__init__(first.message, source=first.source, line=first.line, field=first.field)
        self.problems = list(problems)

    def format_message(self) -> str:
        """Return the single problem, or a count followed by one indented line per problem."""
        if len(self.problems) == 1:
            return self.problems[0].format_message()
        lines = [f"{self.source}: {len(self.problems)} problems"]
        lines += [f"  {problem.format_message()}" for problem in self.problems]
        return "\n".join(lines)


class FleetProblems(ConfigError):
    """Every problem found in a fleet (a directory of agent configs), reported at once.

    Each problem is a :class:`ConfigFileError` naming its file, line and field, so every config
    in the fleet can be fixed in one pass.

    Attributes:
        directory: The fleet's directory.
        problems: Each problem, ordered by file and then by line (at least one).
    """

    def __init__(self, problems: Sequence[ConfigFileError], *, directory: str) -> None:
        if not problems:
            raise ValueError("FleetProblems needs at least one problem")
        count = len(problems)
        files = len({problem.source for problem in problems})
        super().__init__(
            f"{count} problem{'s' if count != 1 else ''} in {files} agent "
            f"config{'s' if files != 1 else ''}"
        )
        self.directory = directory
        self.problems = list(problems)

    def format_message(self) -> str:
        """Return ``directory: N problems in M agent configs`` and one indented line each."""
        lines = [f"{self.directory}: {self.message}"]
        lines += [f"  {problem.format_message()}" for problem in self.problems]
        return "\n".join(lines)


class SchemaRegistryError(ConfigError):
    """The named schema registry cannot do what was asked.

    Raised for a name that is already taken (without ``replace``), a name that is not allowed, and
    a registry file that cannot be opened, is locked too long, or is not a schema registry.

    Attributes:
        path: The registry file.
        name: The schema name concerned, when there is one.
    """

    def __init__(self, message: str, *, path: str, name: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.name = name

    def format_message(self) -> str:
        """Return ``path: message``."""
        return f"{self.path}: {self.message}"


class SchemaError(AgentshapeError):
    """A JSON Schema that cannot be used as a contract."""


class InvalidSchemaError(SchemaError):
    """A schema that is not valid under its draft's meta-schema.

    Attributes:
        path: JSON path of the fault inside the schema, such as ``$.properties.age.type``.
        source: Where the schema came from (a file, an agent id), when known.
    """

    def __init__(self, message: str, *, path: str = "$", source: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.source = source

    def format_message(self) -> str:
        """Return ``[source: ]invalid schema at PATH: message``."""
        prefix = f"{self.source}: " if self.source else ""
        return f"{prefix}invalid schema at {self.path}: {self.message}"


class SchemaReferenceError(SchemaError):
    """A ``$ref`` that cannot be resolved without the network.

    Attributes:
        reference: The reference that did not resolve.
    """

    def __init__(self, message: str, *, reference: str) -> None:
        super().__init__(message)
        self.reference = reference


class SchemaNotFoundError(SchemaError):
    """No schema with the asked-for name is registered.

    Attributes:
        name: The name that was asked for.
        known: Every registered name, sorted.
        suggestion: The registered name nearest to ``name``, when one is close.
        path: The registry file, when the lookup went to one.
    """

    def __init__(
        self,
        message: str,
        *,
        name: str,
        known: Sequence[str] = (),
        suggestion: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.name = name
        self.known = list(known)
        self.suggestion = suggestion
        self.path = path

    def format_message(self) -> str:
        """Return the message, a did-you-mean when a name is close, and the registered names."""
        text = self.message
        text += "." if self.suggestion is None else f"; did you mean {self.suggestion!r}?"
        if self.known:
            text += f" Registered schemas: {', '.join(self.known)}"
        else:
            text += " No schemas are registered yet."
        return text


class OutputError(AgentshapeError):
    """A model's answer that does not have the contract's shape."""


class NoJSONFoundError(OutputError):
    """No complete JSON value could be recovered from a free-text reply.

    Attributes:
        text: The reply that was searched.
    """

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


class OutputValidationError(OutputError):
    """A value that breaks its output schema.

    Attributes:
        errors: Every problem found, in deterministic order.
        last_output: The value (or raw text) that was judged.
    """

    def __init__(
        self,
        message: str,
        *,
        errors: Sequence[ValidationIssue],
        last_output: JsonValue = None,
    ) -> None:
        super().__init__(message)
        self.errors = list(errors)
        self.last_output = last_output

    def format_message(self) -> str:
        """Return the message followed by one line per validation problem."""
        lines = [self.message, *(f"  - {issue}" for issue in self.errors)]
        return "\n".join(lines)


class InputValidationError(AgentshapeError):
    """Run parameters that break the agent's ``parameters_schema``.

    Attributes:
        errors: Every problem found, in deterministic order.
    """

    def __init__(self, message: str, *, errors: Sequence[ValidationIssue]) -> None:
        super().__init__(message)
        self.errors = list(errors)

    def format_message(self) -> str:
        """Return the message followed by one line per validation problem."""
        return "\n".join([self.message, *(f"  - {issue}" for issue in self.errors)])


class ToolExecutionError(AgentshapeError):
    """An input tool call that failed; the run loop sends it back to the model as an error result.

    Attributes:
        tool: The tool's name, such as ``fs:read``.
        message: What went wrong, in words the model (or a person) can act on.
        errors: Each problem with the call's arguments, when they broke the tool's schema.
    """

    def __init__(self, message: str, *, tool: str, errors: Sequence[ValidationIssue] = ()) -> None:
        super().__init__(message)
        self.tool = tool
        self.errors = list(errors)

    def format_message(self) -> str:
        """Return ``tool: message`` followed by one line per argument problem."""
        return "\n".join(
            [f"{self.tool}: {self.message}", *(f"  - {issue}" for issue in self.errors)]
        )


class ProviderError(AgentshapeError):
    """A model provider call that failed after the SDK's own bounded retries.

    Attributes:
        provider: The provider's name, such as ``openai`` or ``anthropic``.
        kind: The run error type this maps to, such as ``provider_rate_limited``.
        status: The HTTP status, when there was a response.
        body: The response body, when there was one (never request headers or keys).
        retry_after_s: The seconds the provider asked to wait before calling again
            (``retry-after``, ``x-ratelimit-reset-*``), when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        kind: str = "provider_error",
        status: int | None = None,
        body: JsonValue = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.kind = kind
        self.status = status
        self.body = body
        self.retry_after_s = retry_after_s

    def format_message(self) -> str:
        """Return ``provider [status]: message``."""
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.provider}{status}: {self.message}"


class RunFailedError(AgentshapeError):
    """A run that failed, raised when the caller asks for its output.

    A run never raises for what a model or provider did; it returns a failed result.
    ``AgentResult.output`` and ``raise_for_status()`` turn that result into this error.

    Attributes:
        type: The run's error type, such as ``output_schema_validation_failed``.
        errors: The last attempt's validation problems (may be empty).
        last_output: The last thing the model produced, so nothing is lost.
    """

    def __init__(
        self,
        message: str,
        *,
        type: str,
        errors: Sequence[ValidationIssue] = (),
        last_output: JsonValue = None,
    ) -> None:
        super().__init__(message)
        self.type = type
        self.errors = list(errors)
        self.last_output = last_output

    def format_message(self) -> str:
        """Return ``[type] message`` followed by one line per validation problem."""
        lines = [f"[{self.type}] {self.message}", *(f"  - {issue}" for issue in self.errors)]
        return "\n".join(lines)


class OutputSchemaValidationError(RunFailedError):
    """A run whose output still broke its schema after every retry.

    What ``AgentResult.output`` and ``raise_for_status()`` raise for a run that failed with
    ``output_schema_validation_failed``; ``errors`` holds the last attempt's problems and
    ``last_output`` what the model last produced. Catch :class:`RunFailedError` for any failure.
    """
