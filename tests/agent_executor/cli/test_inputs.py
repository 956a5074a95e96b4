from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_contracts import (
    AgentConfig,
    ConfigError,
    ConfigFileError,
    InvalidSchemaError,
    SchemaNotFoundError,
)
from agent_core import SchemaRegistry, load_agent_config
from agent_executor._cli.commands import UsageError
from agent_executor._cli.inputs import caller_schema, read_json_file, read_schema_file

pytestmark = pytest.mark.usefixtures("offline_model")


def test_read_json_file(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_text('{"a": [1, 2]}')
    assert read_json_file(path) == {"a": [1, 2]}
    path.write_text('{\n  "a": [1,\n  2,,]}')
    with pytest.raises(UsageError, match=r"o.json is not valid JSON: .* at line 3, column 5"):
        read_json_file(path)
    with pytest.raises(UsageError, match=r"output file .*nope.json does not exist"):
        read_json_file(tmp_path / "nope.json", what="output file")
    with pytest.raises(UsageError, match="is a directory"):
        read_json_file(tmp_path)
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(UsageError, match="not UTF-8"):
        read_json_file(path)


def test_read_schema_file_yaml_keeps_dates_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text("type: object\nproperties:\n  day: {type: string, default: 2025-01-05}\n")
    schema = read_schema_file(path)
    assert schema == {
        "type": "object",
        "properties": {"day": {"type": "string", "default": "2025-01-05"}},
    }


def test_read_schema_file_booleans_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("true")
    assert read_schema_file(path) is True
    path.write_text('"object"')
    with pytest.raises(UsageError, match="an object or a boolean, not str"):
        read_schema_file(path)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(UsageError, match="not nothing"):
        read_schema_file(empty)
    path.write_text('{"type": "object", "required": "name"}')
    with pytest.raises(InvalidSchemaError, match=r"s.json: invalid schema at \$.required"):
        read_schema_file(path)


def namespace(tmp_path: Path, **values: object) -> argparse.Namespace:
    base: dict[str, object] = {"schema": None, "schema_file": None}
    base["registry"] = tmp_path / "r.db"
    base.update(values)
    return argparse.Namespace(**base)


OWN = AgentConfig.model_validate({"id": "own", "output_schema": {"type": "object"}})
DEFAULTED = AgentConfig.model_validate({"id": "def", "default_output_schema": {"type": "object"}})


def test_caller_schema_resolution(tmp_path: Path) -> None:
    SchemaRegistry(tmp_path / "r.db").add("named", {"type": "array"})
    file = tmp_path / "s.json"
    file.write_text('{"type": "string"}')

    assert caller_schema(namespace(tmp_path), OWN).run_arguments() == {}
    assert caller_schema(namespace(tmp_path, schema="named"), DEFAULTED).run_arguments() == {
        "schema_name": "named",
    }
    assert caller_schema(namespace(tmp_path, schema_file=file), DEFAULTED).run_arguments() == {
        "output_schema": {"type": "string"}
    }
    with pytest.raises(SchemaNotFoundError, match="did you mean 'named'"):
        caller_schema(namespace(tmp_path, schema="namd"), DEFAULTED)


def test_an_agents_own_schema_is_refused_before_the_registry_is_read(tmp_path: Path) -> None:
    args = namespace(tmp_path, schema="anything", registry=tmp_path / "missing" / "r.db")
    with pytest.raises(ConfigError, match="agent 'own' has its own output contract"):
        caller_schema(args, OWN)
    args = namespace(tmp_path, schema_file=tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="gave an inline output schema"):
        caller_schema(args, OWN)


BOMB = """\
type: object
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
"""


def test_a_schema_file_is_held_to_the_agent_files_guards(tmp_path: Path) -> None:
    """Aliases that expand to a million values are refused in --schema-file as in agent.yml."""
    schema_file = tmp_path / "bomb.yaml"
    schema_file.write_text(BOMB)
    with pytest.raises(ConfigFileError) as from_schema_file:
        read_schema_file(schema_file)

    agent_file = tmp_path / "agent.yml"
    nested = "".join(f"    {line}\n" for line in BOMB.splitlines())
    agent_file.write_text(f"id: bomb\nsystem_prompt: x\noutput_schema:\n{nested}")
    with pytest.raises(ConfigFileError) as from_agent_file:
        load_agent_config(agent_file)

    assert "expand" in from_schema_file.value.message
    assert from_schema_file.value.message == from_agent_file.value.message
