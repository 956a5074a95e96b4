"""Measure the schema engine against public JSON Schema conformance data.

``python bench/conformance.py PATH [--draft D]`` runs one draft's directory of the official
JSON-Schema-Test-Suite at ``PATH`` (``--draft`` 4, 6, 7, 2019-09, 2020-12 or ``all``; 7 by
default) through :func:`~agent_core._schema_model.model_from_schema`: a test passes when
``Model.model_validate(data)`` succeeds exactly when the suite says ``valid``. The suite's own
rules apply: for draft-04/06/07 the runner names the draft (a root schema without ``$schema``
gets that draft's URI), while 2019-09 and 2020-12 schemas say theirs. Each draft prints
``required:`` (``tests/<draft>/*.json``), ``optional:`` (``optional/**`` except ``format/``) and
``format:`` (``optional/format/**``) lines. Every file under ``PATH/remotes`` is registered as
``http://localhost:1234/<relative path>`` for the run, so remote references resolve offline.

Three labelled corpora can be checked as well, each reported as
``agree: N/M, false_accept: N, false_reject: N, not_converted: N``:

* ``--bench DIR``: JSONSchemaBench ``*.jsonl`` (``{"id", "schema", "tests": [{"data", "valid"}]}``).
* ``--schemastore DIR``: SchemaStore schemas with positive and negative documents (``index.jsonl``).
* ``--bfcl DIR``: BFCL function parameters (``functions.jsonl``); every ``example_valid`` instance
  must be accepted, and invalid instances are derived from them (a required field dropped, a
  property given the wrong JSON type), kept only when ``jsonschema`` rejects them too.

The library functions return reports; only :func:`main` prints. Exit status: 0 when nothing
failed (no required suite failure, no corpus schema left unconverted, no false accept), 1
otherwise, 2 for bad usage such as a path that does not exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

import jsonschema_rs
from jsonschema import Draft7Validator
from pydantic import JsonValue, ValidationError

from agent_contracts import AgentshapeError, InvalidSchemaError
from agent_core import (
    SchemaModel,
    SchemaRootModel,
    compile_schema,
    model_from_schema,
    register_schema,
    registered_schemas,
    unregister_schema,
)
from agent_core._schema_documents import DRAFT_URIS, schema_draft

__all__ = [
    "REMOTES_BASE_URI",
    "SUITE_DRAFTS",
    "CaseFailure",
    "ConversionFailure",
    "CorpusReport",
    "Disagreement",
    "LabelledCase",
    "LabelledSchema",
    "SuiteReport",
    "check_corpus",
    "iter_bench",
    "iter_bfcl",
    "iter_schemastore",
    "main",
    "run_test_suite",
    "suite_remotes",
]

REMOTES_BASE_URI = "http://localhost:1234/"
"""Base URI the test suite expects its ``remotes/`` folder to be served under."""

SUITE_DRAFTS: dict[str, int] = {"4": 4, "6": 6, "7": 7, "2019-09": 2019, "2020-12": 2020}
"""Each ``--draft`` name (the suite folder is ``tests/draft<name>``) with the draft it selects."""

_SUMMARY_CHARS = 160

Section = Literal["required", "optional", "format"]
"""Where a suite case sits: ``*.json``, ``optional/**`` (not format) or ``optional/format/**``."""

_Model = type[SchemaModel] | type[SchemaRootModel]


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class CaseFailure:
    """One test-suite case whose outcome differs from the suite's expectation.

    Attributes:
        file: The test file, relative to the suite root.
        group: The test group's description.
        description: The test case's description.
        data: The instance that was validated.
        expected_valid: What the suite says.
        detail: What happened instead (the validation error, or the conversion error).
        section: ``required``, ``optional`` or ``format`` (``optional/format/**``).
    """

    file: str
    group: str
    description: str
    data: JsonValue
    expected_valid: bool
    detail: str
    section: Section

    @property
    def optional(self) -> bool:
        """Whether the case is under the draft's ``optional`` folder (formats included)."""
        return self.section != "required"


@dataclass
class SuiteReport:
    """Counts and failures of one run of one draft's test suite.

    Attributes:
        draft: The ``--draft`` name run (``7``, ``2020-12``...).
        required_passed: Cases in ``tests/<draft>/*.json`` that passed.
        required_failed: Cases in ``tests/<draft>/*.json`` that failed.
        optional_passed: Cases in ``tests/<draft>/optional/**`` (not ``format/``) that passed.
        optional_failed: Cases in ``tests/<draft>/optional/**`` (not ``format/``) that failed.
        format_passed: Cases in ``tests/<draft>/optional/format/**`` that passed.
        format_failed: Cases in ``tests/<draft>/optional/format/**`` that failed.
        failures: Every failing case, in file order.
    """

    draft: str = "7"
    required_passed: int = 0
    required_failed: int = 0
    optional_passed: int = 0
    optional_failed: int = 0
    format_passed: int = 0
    format_failed: int = 0
    failures: list[CaseFailure] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Return the three summary lines: ``required: ...``, ``optional: ...``, ``format: ...``."""
        return [
            f"required: {self.required_passed} passed, {self.required_failed} failed",
            f"optional: {self.optional_passed} passed, {self.optional_failed} failed",
            f"format: {self.format_passed} passed, {self.format_failed} failed",
        ]

    def count(self, section: Section, *, passed: bool) -> None:
        """Add one outcome to the counter of ``section``."""
        name = f"{section}_{'passed' if passed else 'failed'}"
        setattr(self, name, getattr(self, name) + 1)


@dataclass(frozen=True)
class LabelledCase:
    """One instance with the verdict a corpus expects for it.

    Attributes:
        name: Where the instance comes from (an index, a file name).
        data: The instance.
        valid: The corpus's label.
        note: The corpus's own remark on the instance, if any (a description, an error).
    """

    name: str
    data: JsonValue
    valid: bool
    note: str = ""


@dataclass(frozen=True)
class LabelledSchema:
    """One corpus schema with its labelled instances.

    Attributes:
        schema_id: The corpus's id for the schema.
        schema: The schema itself.
        cases: Its labelled instances (possibly none).
    """

    schema_id: str
    schema: JsonValue
    cases: Sequence[LabelledCase]


@dataclass(frozen=True)
class ConversionFailure:
    """A corpus schema that ``model_from_schema`` could not turn into a model.

    Attributes:
        corpus: The corpus name.
        schema_id: The schema's id in the corpus.
        error: The exception, rendered as ``Type: message``.
    """

    corpus: str
    schema_id: str
    error: str


@dataclass(frozen=True)
class Disagreement:
    """An instance on which our verdict differs from the corpus label.

    Attributes:
        corpus: The corpus name.
        schema_id: The schema's id in the corpus.
        case: The instance's name within the schema's cases.
        data: The instance.
        accepted: Our verdict; ``None`` when validation raised instead of deciding.
        expected_valid: The corpus's label.
        issues: What our validator reports for the instance (or the exception raised).
        note: The corpus's own remark on the instance.
    """

    corpus: str
    schema_id: str
    case: str
    data: JsonValue
    accepted: bool | None
    expected_valid: bool
    issues: tuple[str, ...]
    note: str

    def render(self) -> str:
        """Return a few lines for a person: where, what, our verdict, the label, our issues."""
        verdict = {True: "accept", False: "reject", None: "crash"}[self.accepted]
        label = "valid" if self.expected_valid else "invalid"
        lines = [
            f"[{self.corpus}] {self.schema_id} :: {self.case}",
            f"  instance: {_summary(self.data)}",
            f"  ours: {verdict}; label: {label}",
        ]
        lines += [f"  issue: {issue}" for issue in self.issues]
        if self.note:
            lines.append(f"  label note: {self.note}")
        return "\n".join(lines)


@dataclass
class CorpusReport:
    """Agreement of our verdicts with one corpus's labels.

    Attributes:
        corpus: The corpus name.
        schemas: Schemas seen.
        instances: Labelled instances seen (including those of unconverted schemas).
        agree: Instances where our verdict matches the label.
        false_accept: Instances labelled invalid that we accepted.
        false_reject: Instances labelled valid that we rejected.
        crashed: Instances where validation raised something other than a validation error.
        format_annotation: Instances labelled invalid, accepted because their 2020-12 schema
            makes ``format`` an annotation (they fail only when formats are asserted).
        not_converted: Schemas that could not be converted, with their error.
        disagreements: Every instance counted in ``false_accept``, ``false_reject``,
            ``crashed`` or ``format_annotation``.
    """

    corpus: str
    schemas: int = 0
    instances: int = 0
    agree: int = 0
    false_accept: int = 0
    false_reject: int = 0
    crashed: int = 0
    format_annotation: int = 0
    not_converted: list[ConversionFailure] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)

    def summary(self) -> str:
        """Return ``agree: N/M, false_accept: N, false_reject: N, not_converted: N``.

        ``, crashed: N`` is appended when some validation raised instead of deciding, and
        ``, format_annotation: N`` when 2020-12's annotation-only ``format`` explains accepts.
        """
        text = (
            f"agree: {self.agree}/{self.instances}, false_accept: {self.false_accept}, "
            f"false_reject: {self.false_reject}, not_converted: {len(self.not_converted)}"
        )
        text += f", crashed: {self.crashed}" if self.crashed else ""
        return text + (f", format_annotation: {n}" if (n := self.format_annotation) else "")

    @property
    def ok(self) -> bool:
        """Whether every schema converted and nothing labelled invalid was accepted."""
        return not self.not_converted and not self.false_accept and not self.crashed


# --------------------------------------------------------------------------- rendering


def _describe(error: BaseException) -> str:
    """Return ``Type: message`` on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _summary(data: JsonValue) -> str:
    """Return compact JSON for ``data``, cut to a readable length."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."


# --------------------------------------------------------------------------- test suite


def _read_json(path: Path) -> JsonValue:
    """Return the JSON value in ``path``.

    Raises:
        OSError: The file cannot be read.
        ValueError: The file is not JSON.
    """
    value: JsonValue = json.loads(path.read_text(encoding="utf-8"))
    return value


@contextmanager
def suite_remotes(suite_dir: Path) -> Iterator[list[str]]:
    """Register every file in ``suite_dir/remotes`` under :data:`REMOTES_BASE_URI` for a block.

    URIs that were already registered are left alone; the ones added are unregistered on exit.

    Args:
        suite_dir: The test suite's root folder.

    Yields:
        The URIs this call registered.

    Raises:
        OSError: A remote file cannot be read.
        ValueError: A remote file is not JSON.
        agent_contracts._errors.SchemaError: The registry refuses a remote schema.
    """
    remotes = suite_dir / "remotes"
    already = set(registered_schemas())
    added: list[str] = []
    try:
        for path in sorted(remotes.rglob("*.json")):
            uri = REMOTES_BASE_URI + path.relative_to(remotes).as_posix()
            if uri in already:
                continue
            register_schema(uri, _as_schema(_read_json(path), uri))
            added.append(uri)
        yield added
    finally:
        for uri in added:
            unregister_schema(uri)


def _suite_files(folder: Path) -> list[tuple[Path, Section]]:
    """Return one draft's test files with the section of each, in a stable order."""
    optional = folder / "optional"
    files: list[tuple[Path, Section]] = [
        (path, "required") for path in sorted(folder.glob("*.json"))
    ]
    for path in sorted(optional.rglob("*.json")):
        inside = path.relative_to(optional).parts
        files.append((path, "format" if inside[0] == "format" else "optional"))
    return files


def _for_draft(
    schema: Mapping[str, JsonValue] | bool, draft: int
) -> Mapping[str, JsonValue] | bool:
    """Return ``schema`` as the suite's runner reads it under ``draft``.

    Draft-07 and earlier are told the draft (a root without ``$schema`` gets the draft's URI);
    2019-09 and 2020-12 schemas name their own dialect, so they are left as they are.
    """
    if draft >= 2019 or not isinstance(schema, Mapping) or "$schema" in schema:
        return schema
    return {"$schema": DRAFT_URIS[draft], **schema}


def _as_schema(value: JsonValue, source: str) -> Mapping[str, JsonValue] | bool:
    """Return ``value`` typed as a schema.

    Raises:
        InvalidSchemaError: ``value`` is neither a JSON object nor a boolean.
    """
    if isinstance(value, bool | dict):
        return value
    raise InvalidSchemaError(
        f"a JSON Schema must be an object or a boolean, got {type(value).__name__}", source=source
    )


def _judge(model: _Model, data: JsonValue) -> tuple[bool, str]:
    """Return whether ``model`` accepts ``data`` and, when it does not, why."""
    try:
        model.model_validate(data)
    except ValidationError as error:
        return False, _describe(error)
    return True, ""


def run_test_suite(suite_dir: Path, draft: str = "7") -> SuiteReport:
    """Run one draft of the JSON-Schema-Test-Suite at ``suite_dir`` through ``model_from_schema``.

    A case passes when ``Model.model_validate(data)`` succeeds exactly when the case is labelled
    valid. A group whose schema does not convert fails all its cases; an engine exception while
    validating fails that case. Nothing raised by the engine escapes.

    Args:
        suite_dir: Root of the suite (holding ``tests/draft<draft>`` and ``remotes``).
        draft: A key of :data:`SUITE_DRAFTS` (``4``, ``6``, ``7``, ``2019-09``, ``2020-12``).

    Returns:
        The counts, split into required (``tests/<draft>/*.json``), optional and format cases.

    Raises:
        KeyError: ``draft`` is not a key of :data:`SUITE_DRAFTS`.
        FileNotFoundError: ``suite_dir`` has no ``tests/draft<draft>`` folder.
        OSError: A test file cannot be read.
        ValueError: A test file is not JSON.
        agent_contracts._errors.SchemaError: A remote schema is refused by the registry.
    """
    number = SUITE_DRAFTS[draft]
    folder = suite_dir / "tests" / f"draft{draft}"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no JSON-Schema-Test-Suite at {suite_dir} (needs tests/draft{draft})"
        )
    report = SuiteReport(draft=draft)
    with suite_remotes(suite_dir):
        for path, section in _suite_files(folder):
            groups = _read_json(path)
            if not isinstance(groups, list):
                raise ValueError(f"{path}: expected a list of test groups")
            relative = path.relative_to(suite_dir).as_posix()
            for group in groups:
                _run_group(report, relative, group, section=section, draft=number)
    return report


def _run_group(
    report: SuiteReport, relative: str, group: JsonValue, *, section: Section, draft: int
) -> None:
    """Run one test group and add its outcomes to ``report``."""
    if not isinstance(group, dict) or not isinstance(group.get("tests"), list):
        raise ValueError(f"{relative}: a test group without a 'tests' list")
    tests = group["tests"]
    assert isinstance(tests, list)
    name = str(group.get("description", ""))
    model: _Model | None = None
    convert_error = ""
    source = f"{relative}: {name}"
    try:
        schema = _for_draft(_as_schema(group.get("schema", True), source), draft)
        model = model_from_schema(schema, source=source)
    except Exception as error:  # any engine failure is a result, never a crash
        convert_error = "schema not converted: " + _describe(error)
    for case in tests:
        if not isinstance(case, dict):
            raise ValueError(f"{relative}: {name}: a test case that is not an object")
        data = case.get("data")
        expected = case.get("valid") is True
        if model is None:
            passed, detail = False, convert_error
        else:
            try:
                accepted, why = _judge(model, data)
            except Exception as error:
                passed, detail = False, "validation raised " + _describe(error)
            else:
                passed = accepted == expected
                detail = why if not accepted else "accepted"
        report.count(section, passed=passed)
        if not passed:
            report.failures.append(
                CaseFailure(
                    file=relative,
                    group=name,
                    description=str(case.get("description", "")),
                    data=data,
                    expected_valid=expected,
                    detail=detail,
                    section=section,
                )
            )


# --------------------------------------------------------------------------- labelled corpora


def _require_dir(folder: Path, marker: str) -> None:
    """Raise :class:`FileNotFoundError` unless ``folder/marker`` exists (``*`` globs allowed)."""
    if not folder.is_dir() or not any(folder.glob(marker)):
        raise FileNotFoundError(f"no corpus at {folder} (expected {marker} in it)")


def _json_lines(path: Path) -> Iterator[dict[str, JsonValue]]:
    """Yield each JSON object of a JSON Lines file, skipping blank lines.

    Raises:
        ValueError: A line is not a JSON object (names the file and line).
    """
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise ValueError(f"{path}:{number}: {error}") from error
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object")
            yield record


def iter_bench(folder: Path) -> Iterator[LabelledSchema]:
    """Yield the JSONSchemaBench schemas in ``folder/*.jsonl``, files and lines in order.

    Raises:
        FileNotFoundError: ``folder`` holds no ``*.jsonl`` file.
        ValueError: A line is not a JSON object.
    """
    _require_dir(folder, "*.jsonl")
    for path in sorted(folder.glob("*.jsonl")):
        for record in _json_lines(path):
            cases = []
            tests = record.get("tests") or []
            assert isinstance(tests, list)
            for index, test in enumerate(tests):
                if not isinstance(test, dict):
                    raise ValueError(f"{path}: {record.get('id')}: a test that is not an object")
                remarks = [
                    str(test[key]) for key in ("description", "python_error") if test.get(key)
                ]
                cases.append(
                    LabelledCase(
                        name=f"tests[{index}]",
                        data=test.get("data"),
                        valid=test.get("valid") is True,
                        note="; ".join(remarks),
                    )
                )
            yield LabelledSchema(str(record.get("id")), record.get("schema"), cases)


def iter_schemastore(folder: Path) -> Iterator[LabelledSchema]:
    """Yield the SchemaStore schemas listed in ``folder/index.jsonl`` with their test documents.

    Raises:
        FileNotFoundError: ``folder`` has no ``index.jsonl``, or a listed file is missing.
        ValueError: The index or a listed file is not JSON.
    """
    _require_dir(folder, "index.jsonl")
    for record in _json_lines(folder / "index.jsonl"):
        cases = []
        tests = record.get("tests") or []
        assert isinstance(tests, list)
        for test in tests:
            if not isinstance(test, dict):
                raise ValueError(f"{folder}: {record.get('id')}: a test that is not an object")
            remarks = []
            if test.get("converted_from"):
                remarks.append(f"converted from {test['converted_from']}")
            reference = test.get("python_jsonschema_draft7_valid")
            remarks.append(f"jsonschema Draft7Validator without format says {reference}")
            name = str(test.get("file"))
            cases.append(
                LabelledCase(
                    name=name,
                    data=_read_json(folder / name),
                    valid=test.get("expected_valid") is True,
                    note="; ".join(remarks),
                )
            )
        schema = _read_json(folder / str(record.get("schema_file")))
        yield LabelledSchema(str(record.get("id")), schema, cases)


_WRONG_TYPED: dict[str, JsonValue] = {
    "string": 12345,
    "integer": "12345",
    "number": "1.5",
    "boolean": "true",
    "array": "[]",
    "object": "{}",
    "null": "null",
}
"""For a declared JSON type, a value of another type that looks alike (for wrong-type negatives)."""


def _bfcl_negatives(schema: JsonValue, example: JsonValue) -> list[LabelledCase]:
    """Derive invalid instances from a valid BFCL example, kept when ``jsonschema`` agrees.

    One drops the first required property; one gives the first typed property present a value of
    another JSON type. A candidate ``Draft7Validator`` accepts is discarded, so every label is
    confirmed by the reference implementation.
    """
    if not isinstance(schema, dict) or not isinstance(example, dict):
        return []
    candidates: list[tuple[str, dict[str, JsonValue]]] = []
    required = schema.get("required")
    if isinstance(required, list):
        present = [key for key in required if isinstance(key, str) and key in example]
        if present:
            dropped = {key: value for key, value in example.items() if key != present[0]}
            candidates.append((f"without required {present[0]!r}", dropped))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key in example:
            sub = properties.get(key)
            declared = sub.get("type") if isinstance(sub, dict) else None
            if isinstance(declared, str) and declared in _WRONG_TYPED:
                changed = {**example, key: _WRONG_TYPED[declared]}
                candidates.append((f"{key!r} given the wrong type (not {declared})", changed))
                break
    checker = Draft7Validator(schema)
    return [
        LabelledCase(name=name, data=data, valid=False, note="derived: " + name)
        for name, data in candidates
        if not checker.is_valid(data)
    ]


def iter_bfcl(folder: Path) -> Iterator[LabelledSchema]:
    """Yield BFCL's ``parameters_jsonschema`` with its valid examples and derived invalid ones.

    Raises:
        FileNotFoundError: ``folder`` has no ``functions.jsonl``.
        ValueError: A line is not a JSON object.
    """
    _require_dir(folder, "functions.jsonl")
    for record in _json_lines(folder / "functions.jsonl"):
        schema = record.get("parameters_jsonschema")
        examples = record.get("example_valid") or []
        assert isinstance(examples, list)
        cases = [
            LabelledCase(name=f"example_valid[{index}]", data=example, valid=True)
            for index, example in enumerate(examples)
        ]
        if examples:
            cases += _bfcl_negatives(schema, examples[0])
        yield LabelledSchema(str(record.get("id")), schema, cases)


def check_corpus(corpus: str, schemas: Iterable[LabelledSchema]) -> CorpusReport:
    """Convert each schema with ``model_from_schema`` and compare its verdicts with the labels.

    A schema that fails to convert is recorded with its error (its instances then count in
    ``instances`` but in no other column); an engine exception while validating counts as
    ``crashed``. Nothing raised by the engine escapes.

    Args:
        corpus: The corpus name, used in the report.
        schemas: The labelled schemas, such as from :func:`iter_bench`.

    Returns:
        The agreement counts with every disagreement and conversion failure.
    """
    report = CorpusReport(corpus)
    for item in schemas:
        report.schemas += 1
        report.instances += len(item.cases)
        try:
            schema = _as_schema(item.schema, item.schema_id)
            model = model_from_schema(schema, source=item.schema_id)
        except Exception as error:  # any engine failure is a result, never a crash
            report.not_converted.append(ConversionFailure(corpus, item.schema_id, _describe(error)))
            continue
        for case in item.cases:
            try:
                accepted: bool | None = _judge(model, case.data)[0]
            except Exception as error:
                accepted, issues = None, [_describe(error)]
                report.crashed += 1
            else:
                if accepted == case.valid:
                    report.agree += 1
                    continue
                if accepted and _format_annotation_only(schema, case.data):
                    report.format_annotation += 1
                elif accepted:
                    report.false_accept += 1
                else:
                    report.false_reject += 1
                issues = _issues(schema, item.schema_id, case.data)
            report.disagreements.append(
                Disagreement(
                    corpus=corpus,
                    schema_id=item.schema_id,
                    case=case.name,
                    data=case.data,
                    accepted=accepted,
                    expected_valid=case.valid,
                    issues=tuple(issues),
                    note=case.note,
                )
            )
    return report


def _format_annotation_only(schema: Mapping[str, JsonValue] | bool, data: JsonValue) -> bool:
    """Whether a 2020-12 schema rejects ``data`` only when ``format`` is asserted.

    2020-12 makes ``format`` an annotation (the README's policy); corpora labelled on the
    assumption that formats are asserted then disagree with it, and are counted apart.
    """
    if not isinstance(schema, Mapping) or schema_draft(schema) != 2020:
        return False
    try:
        asserting = jsonschema_rs.Draft202012Validator(dict(schema), validate_formats=True)
        return not asserting.is_valid(data)
    except (ValueError, jsonschema_rs.ValidationError):
        return False


def _issues(schema: Mapping[str, JsonValue] | bool, source: str, data: JsonValue) -> list[str]:
    """Return what the compiled validator reports for ``data`` (or why it could not)."""
    try:
        return [str(issue) for issue in compile_schema(schema, source=source).issues(data)]
    except Exception as error:
        return [f"(no issues: {_describe(error)})"]


# --------------------------------------------------------------------------- command line


_CORPORA: dict[str, tuple[str, Callable[[Path], Iterator[LabelledSchema]]]] = {
    "bench": ("jsonschemabench", iter_bench),
    "schemastore": ("schemastore", iter_schemastore),
    "bfcl": ("bfcl", iter_bfcl),
}


def _parser() -> argparse.ArgumentParser:
    """Build the command-line parser."""
    parser = argparse.ArgumentParser(
        prog="python bench/conformance.py",
        description="Check agentshape's JSON Schema engine against public conformance data.",
    )
    parser.add_argument("path", nargs="?", type=Path, help="JSON-Schema-Test-Suite root")
    parser.add_argument(
        "--draft",
        choices=[*SUITE_DRAFTS, "all"],
        default="7",
        help="which draft of the suite to run (default 7)",
    )
    parser.add_argument("--bench", type=Path, metavar="DIR", help="JSONSchemaBench folder")
    parser.add_argument("--schemastore", type=Path, metavar="DIR", help="SchemaStore folder")
    parser.add_argument("--bfcl", type=Path, metavar="DIR", help="BFCL folder")
    parser.add_argument(
        "--explain", type=Path, metavar="FILE", help="write every disagreement to FILE"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list each failure")
    return parser


def _print_suite(report: SuiteReport, out: TextIO, *, verbose: bool) -> None:
    """Print the suite summary and, when verbose, each failing case."""
    for line in report.lines():
        print(line, file=out)
    if not verbose:
        return
    for failure in report.failures:
        kind = failure.section
        label = "valid" if failure.expected_valid else "invalid"
        print(f"FAIL ({kind}) {failure.file} :: {failure.group} :: {failure.description}", file=out)
        print(f"  instance: {_summary(failure.data)}; expected {label}; {failure.detail}", file=out)


def _explanations(report: CorpusReport) -> list[str]:
    """Return the conversion failures then the disagreements of ``report``, rendered."""
    lines = [
        f"[{failure.corpus}] {failure.schema_id} :: not converted: {failure.error}"
        for failure in report.not_converted
    ]
    return lines + [disagreement.render() for disagreement in report.disagreements]


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the checks the command line asks for and print their summaries.

    Args:
        argv: The arguments (``sys.argv[1:]`` when ``None``).
        out: Where to print (standard output when ``None``); errors go to standard error.

    Returns:
        0 when every check passed, 1 when one failed, 2 for bad usage or unreadable data.
    """
    out = out or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    folders = {name: getattr(args, name) for name in _CORPORA if getattr(args, name)}
    if args.path is None and not folders:
        parser.print_usage(sys.stderr)
        print(
            "error: give the test suite PATH, or --bench/--schemastore/--bfcl DIR", file=sys.stderr
        )
        return 2
    for option, folder in [("PATH", args.path), *((f"--{k}", v) for k, v in folders.items())]:
        if folder is not None and not folder.is_dir():
            print(f"error: {option}: no such directory: {folder}", file=sys.stderr)
            return 2
    status = 0
    explained: list[str] = []
    try:
        drafts = list(SUITE_DRAFTS) if args.draft == "all" else [args.draft]
        for draft in drafts if args.path is not None else []:
            print(f"JSON-Schema-Test-Suite draft{draft}: {args.path}", file=out)
            suite = run_test_suite(args.path, draft)
            _print_suite(suite, out, verbose=args.verbose)
            status |= int(suite.required_failed > 0)
        for name, folder in folders.items():
            corpus, loader = _CORPORA[name]
            report = check_corpus(corpus, loader(folder))
            print(f"{corpus}: {report.schemas} schemas, {report.instances} instances", file=out)
            print(report.summary(), file=out)
            status |= int(not report.ok)
            explained += _explanations(report)
            if args.verbose:
                for text in _explanations(report):
                    print(text, file=out)
    except (OSError, ValueError, AgentshapeError) as error:
        print(f"error: cannot use the conformance data: {error}", file=sys.stderr)
        return 2
    if args.explain is not None:
        args.explain.write_text("\n".join(explained) + "\n" if explained else "", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
