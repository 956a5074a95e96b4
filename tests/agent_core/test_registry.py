from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest
from pydantic import JsonValue

from agent_contracts import (
    ConfigError,
    InvalidSchemaError,
    SchemaError,
    SchemaNotFoundError,
    SchemaReferenceError,
    SchemaRegistryError,
)
from agent_core import (
    DEFAULT_REGISTRY_PATH,
    NamedSchema,
    ResolvedSchema,
    SchemaRegistry,
    check_schema_name,
    schema_hash,
)

ROOT = Path(__file__).resolve().parents[2]

REVIEW: dict[str, JsonValue] = {
    "type": "object",
    "required": ["summary", "issues"],
    "properties": {
        "summary": {"type": "string"},
        "issues": {"type": "array", "items": {"type": "string"}},
    },
}
PLAN: dict[str, JsonValue] = {"type": "object", "properties": {"steps": {"type": "array"}}}


@pytest.fixture
def registry(tmp_path: Path) -> SchemaRegistry:
    return SchemaRegistry(tmp_path / "state" / "schemas.db")


def test_added_schema_comes_back_by_name_in_a_new_registry_object(registry: SchemaRegistry) -> None:
    entry = registry.add("code-review", REVIEW, description="What a reviewer returns")

    assert entry.name == "code-review"
    assert entry.description == "What a reviewer returns"
    assert entry.hash == schema_hash(REVIEW)
    assert entry.created_at == entry.modified_at
    assert SchemaRegistry(registry.path).get("code-review") == REVIEW
    assert "code-review" in registry
    assert "other" not in registry


def test_schema_is_stored_as_canonical_json(registry: SchemaRegistry) -> None:
    registry.add("plan", {"type": "object", "properties": {"b": {}, "a": {}}})

    with closing(sqlite3.connect(registry.path)) as connection, connection:
        (text,) = connection.execute(
            "SELECT schema FROM output_schemas WHERE name = 'plan'"
        ).fetchone()
    assert text == '{"properties":{"a":{},"b":{}},"type":"object"}'


def test_reading_a_registry_that_does_not_exist_finds_nothing_and_creates_nothing(
    tmp_path: Path,
) -> None:
    registry = SchemaRegistry(tmp_path / "missing" / "schemas.db")

    assert registry.list() == []
    with pytest.raises(SchemaNotFoundError):
        registry.get("anything")
    assert not (tmp_path / "missing").exists()


def test_default_path_is_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    registry = SchemaRegistry()

    registry.add("plan", PLAN)

    assert registry.path == tmp_path / DEFAULT_REGISTRY_PATH
    assert (tmp_path / ".agentshape" / "schemas.db").is_file()


def test_list_is_sorted_and_carries_description_hash_and_times(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)
    registry.add("code-review", REVIEW, description="review output")

    entries = registry.list()

    assert [e.name for e in entries] == ["code-review", "plan"]
    assert entries[0].description == "review output"
    assert entries[1].description is None
    assert entries[0].hash == schema_hash(REVIEW)
    assert all(isinstance(e, NamedSchema) and e.created_at.tzinfo for e in entries)
    assert registry.names() == ["code-review", "plan"]
    assert registry.info("plan") == entries[1]


def test_duplicate_name_is_refused_without_replace(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)

    with pytest.raises(SchemaRegistryError) as caught:
        registry.add("plan", REVIEW)

    assert isinstance(caught.value, ConfigError)
    assert caught.value.name == "plan"
    assert str(caught.value) == (
        f"{registry.path}: a schema named 'plan' is already registered; remove it first or add "
        "it again with replace"
    )
    assert registry.get("plan") == PLAN


def test_replace_overwrites_and_keeps_the_creation_time(registry: SchemaRegistry) -> None:
    first = registry.add("plan", PLAN, description="old")

    second = registry.add("plan", REVIEW, description="new", replace=True)

    assert registry.get("plan") == REVIEW
    assert second.created_at == first.created_at
    assert second.modified_at >= first.modified_at
    assert registry.info("plan").description == "new"
    assert registry.info("plan").hash == schema_hash(REVIEW)


def test_invalid_schema_is_refused_and_not_stored(registry: SchemaRegistry) -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        registry.add("broken", {"type": "object", "properties": {"a": {"type": "strin"}}})

    assert caught.value.path == "$.properties.a.type"
    assert "schema 'broken'" in str(caught.value)
    assert registry.list() == []


def test_schema_with_an_unresolvable_ref_is_refused(registry: SchemaRegistry) -> None:
    with pytest.raises(SchemaReferenceError):
        registry.add("remote", {"$ref": "https://schemas.example.invalid/thing.json"})

    assert registry.list() == []


@pytest.mark.parametrize("name", ["", "-lead", ".hidden", "has space", "a/b", "ü", "x" * 129])
def test_bad_names_are_refused(registry: SchemaRegistry, name: str) -> None:
    with pytest.raises(SchemaRegistryError, match="is not a valid schema name"):
        registry.add(name, PLAN)

    assert registry.list() == []


@pytest.mark.parametrize("name", ["a", "7", "code-analysis-result", "v1.2_final", "x" * 128])
def test_good_names_are_accepted(registry: SchemaRegistry, name: str) -> None:
    assert check_schema_name(name) == name
    registry.add(name, PLAN)
    assert registry.names() == [name]


def test_unknown_name_suggests_the_nearest_and_lists_the_known(registry: SchemaRegistry) -> None:
    registry.add("code-review", REVIEW)
    registry.add("plan", PLAN)

    with pytest.raises(SchemaNotFoundError) as caught:
        registry.get("code-reveiw")

    error = caught.value
    assert isinstance(error, SchemaError)
    assert error.name == "code-reveiw"
    assert error.suggestion == "code-review"
    assert error.known == ["code-review", "plan"]
    assert str(error) == (
        f"no schema named 'code-reveiw' in {registry.path}; did you mean 'code-review'? "
        "Registered schemas: code-review, plan"
    )


def test_unknown_name_in_an_empty_registry_says_so(registry: SchemaRegistry) -> None:
    with pytest.raises(SchemaNotFoundError) as caught:
        registry.info("plan")

    assert str(caught.value) == (
        f"no schema named 'plan' in {registry.path}. No schemas are registered yet."
    )


def test_remove_deletes_and_unknown_remove_is_an_error(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)
    registry.add("code-review", REVIEW)

    registry.remove("plan")

    assert registry.names() == ["code-review"]
    with pytest.raises(SchemaNotFoundError) as caught:
        registry.remove("plan")
    assert caught.value.known == ["code-review"]
    assert caught.value.suggestion is None


def test_corrupt_file_gives_an_error_naming_it_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "schemas.db"
    garbage = b"this is not a SQLite database\n" * 200
    path.write_bytes(garbage)
    registry = SchemaRegistry(path)

    for action in (registry.list, lambda: registry.get("plan"), lambda: registry.add("p", PLAN)):
        with pytest.raises(SchemaRegistryError) as caught:
            action()
        message = str(caught.value)
        assert message.startswith(f"{path}: cannot ")
        assert "file is not a database" in message
        assert "move it aside" in message
        assert caught.value.path == str(path)
    assert path.read_bytes() == garbage


def test_damaged_entry_is_reported_with_its_name(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)
    with closing(sqlite3.connect(registry.path)) as connection, connection:
        connection.execute("UPDATE output_schemas SET schema = '{not json' WHERE name = 'plan'")

    with pytest.raises(SchemaRegistryError, match="the stored schema 'plan' is not valid JSON"):
        registry.get("plan")


def test_directory_as_the_registry_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaRegistryError, match="is a directory"):
        SchemaRegistry(tmp_path).add("plan", PLAN)


def test_a_write_lock_held_too_long_is_a_clear_error(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)
    holder = sqlite3.connect(registry.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        impatient = SchemaRegistry(registry.path, timeout=0.05)
        with pytest.raises(SchemaRegistryError, match="held the registry locked"):
            impatient.add("other", REVIEW)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert registry.names() == ["plan"]


_WORKER = textwrap.dedent(
    """
    import sys
    from agent_contracts._errors import SchemaRegistryError
    from agent_core._registry import SchemaRegistry

    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    registry = SchemaRegistry(path)
    for i in range(count):
        registry.add(f"w{worker}-{i}", {"type": "object", "title": f"{worker}/{i}"})
    try:
        registry.add("shared", {"type": "object", "title": worker})
        print("added")
    except SchemaRegistryError as error:
        print("taken" if "already registered" in str(error) else f"error: {error}")
    """
)


def test_processes_adding_at_once_lose_nothing_and_one_wins_a_shared_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "schemas.db"
    workers, count = 4, 12
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), str(w), str(count)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outputs.append(out.strip())

    assert sorted(outputs) == ["added"] + ["taken"] * (workers - 1)
    registry = SchemaRegistry(path)
    expected = {f"w{w}-{i}" for w in range(workers) for i in range(count)} | {"shared"}
    assert set(registry.names()) == expected
    assert registry.get("w3-11") == {"type": "object", "title": "3/11"}
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- resolution order ----------------------------------------------------------------------------

INLINE: dict[str, JsonValue] = {"type": "object", "title": "inline"}
DEFAULT: dict[str, JsonValue] = {"type": "object", "title": "default"}
OWN: dict[str, JsonValue] = {"type": "object", "title": "own"}


def test_inline_schema_comes_first(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)

    resolved = registry.resolve_output_schema(inline=INLINE, name="plan", agent_default=DEFAULT)

    assert resolved == ResolvedSchema(INLINE, "inline")


def test_named_schema_comes_before_the_agent_default(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)

    resolved = registry.resolve_output_schema(name="plan", agent_default=DEFAULT)

    assert resolved == ResolvedSchema(PLAN, "named")


def test_agent_default_is_used_when_the_caller_gives_nothing(registry: SchemaRegistry) -> None:
    assert registry.resolve_output_schema(agent_default=DEFAULT) == (DEFAULT, "default")


def test_no_schema_anywhere_resolves_to_none(registry: SchemaRegistry) -> None:
    assert registry.resolve_output_schema() is None


def test_agent_own_schema_is_used_when_the_caller_gives_none(registry: SchemaRegistry) -> None:
    assert registry.resolve_output_schema(agent_own=OWN) == (OWN, "agent")


@pytest.mark.parametrize(
    ("inline", "name", "given"),
    [(INLINE, None, "an inline output schema"), (None, "plan", "schema 'plan'")],
)
def test_caller_cannot_override_the_agent_own_schema(
    registry: SchemaRegistry, inline: dict[str, JsonValue] | None, name: str | None, given: str
) -> None:
    registry.add("plan", PLAN)

    with pytest.raises(ConfigError) as caught:
        registry.resolve_output_schema(inline=inline, name=name, agent_own=OWN, agent_id="reviewer")

    assert str(caught.value).startswith(
        f"agent 'reviewer' has its own output contract, which a caller cannot override; this "
        f"run gave {given}."
    )


def test_unknown_name_in_resolution_is_schema_not_found(registry: SchemaRegistry) -> None:
    registry.add("plan", PLAN)

    with pytest.raises(SchemaNotFoundError) as caught:
        registry.resolve_output_schema(name="plna", agent_default=DEFAULT)

    assert caught.value.suggestion == "plan"


def test_stored_schema_round_trips_through_json(registry: SchemaRegistry) -> None:
    schema: dict[str, JsonValue] = {"type": "object", "description": "naïve — ünïcode ✓"}
    registry.add("unicode", schema)

    assert registry.get("unicode") == schema
    assert json.dumps(registry.get("unicode"), sort_keys=True) == json.dumps(schema, sort_keys=True)


def test_a_schema_every_run_would_refuse_is_not_stored(registry: SchemaRegistry) -> None:
    too_many = {"type": "integer", "enum": list(range(10_001))}
    with pytest.raises(InvalidSchemaError, match="`enum` lists 10,001 values"):
        registry.add("numbers", too_many)
    assert registry.list() == []


def test_a_damaged_row_is_named_and_does_not_hide_the_others(
    registry: SchemaRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    registry.add("good", REVIEW)
    registry.add("bad", REVIEW)
    with sqlite3.connect(registry.path) as connection:
        connection.execute("UPDATE output_schemas SET created_at = 'garbage' WHERE name = 'bad'")
    connection.close()

    assert [entry.name for entry in registry.list()] == ["good"]
    assert "the entry 'bad' is damaged (created_at: " in caplog.text
    with pytest.raises(SchemaRegistryError, match="the entry 'bad' is damaged"):
        registry.info("bad")


def test_a_description_that_is_not_utf8_is_refused(registry: SchemaRegistry) -> None:
    with pytest.raises(SchemaRegistryError, match=r"not UTF-8 text \(byte 0xe9 at character 4\)"):
        registry.add("demo", REVIEW, description="caf\udce9")
    assert registry.list() == []
