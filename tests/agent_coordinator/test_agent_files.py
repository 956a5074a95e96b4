"""A schema written back into an agent's YAML: comments and order kept; stale edits refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent_coordinator._agent_files import FileChanged, file_version, read_agent_file, write_schema

FLAT = """\
# top comment
id: reviewer
system_prompt: You review.   # inline comment
output_schema:
  type: object   # the kind
  required: [summary]
  properties:
    summary: {type: string}   # the summary
    n:
      type: integer
"""
FILE_FORM = """\
schema: kb.agent/1
id: w
context:
  static:
    system: Write.
output:
  maxRetries: 2   # the retries
"""


def _write(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = tmp_path / "agent.yml"
    path.write_text(text)
    return path, read_agent_file(path)[1]


def test_changed_members_change_and_everything_else_stays(tmp_path: Path) -> None:
    path, version = _write(tmp_path, FLAT)
    schema = {
        "type": "object",
        "required": ["summary", "x"],
        "properties": {"summary": {"type": "string"}, "x": {"type": "boolean"}},
    }
    text = write_schema(path, "output_schema", schema, version)
    assert path.read_text() == text
    assert text == (
        "# top comment\n"
        "id: reviewer\n"
        "system_prompt: You review.   # inline comment\n"
        "output_schema:\n"
        "  type: object   # the kind\n"
        "  required: [summary, x]\n"
        "  properties:\n"
        "    summary: {type: string}   # the summary\n"
        "    x:\n"
        "      type: boolean\n"
    )


def test_a_missing_schema_goes_where_the_files_form_puts_it(tmp_path: Path) -> None:
    path, version = _write(tmp_path, FILE_FORM)
    text = write_schema(path, "output_schema", {"type": "object"}, version)
    assert text == FILE_FORM + "  schema:\n    type: object\n"
    path, version = _write(tmp_path, FLAT)
    text = write_schema(path, "parameters_schema", {"type": "object"}, version)
    assert text == FLAT + "parameters_schema:\n  type: object\n"


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    path, version = _write(tmp_path, FLAT)
    path.write_text(FLAT + "# theirs\n")
    with pytest.raises(FileChanged) as caught:
        write_schema(path, "output_schema", {"type": "object"}, version)
    assert caught.value.version == file_version((FLAT + "# theirs\n").encode())
    assert path.read_text() == FLAT + "# theirs\n"


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path, version = _write(tmp_path, "- a\n- b\n")
    with pytest.raises(ValueError, match="does not hold a YAML mapping"):
        write_schema(path, "output_schema", {"type": "object"}, version)


def test_a_node_shared_with_another_field_is_copied_not_changed(tmp_path: Path) -> None:
    shared = "params: 1\nparameters_schema: &s\n  type: object   # kept\noutput_schema: *s\n"
    path, version = _write(tmp_path, shared)
    text = write_schema(path, "output_schema", {"type": "object", "title": "out"}, version)
    loaded = yaml.safe_load(text)
    assert loaded["parameters_schema"] == {"type": "object"}
    assert loaded["output_schema"] == {"type": "object", "title": "out"}
    assert "parameters_schema:\n  type: object   # kept\n" in text


def test_a_node_shared_inside_the_saved_schema_is_copied_before_each_change(
    tmp_path: Path,
) -> None:
    inner = "output_schema:\n  properties:\n    a: &s {type: string}\n    b: *s\n"
    path, version = _write(tmp_path, inner)
    schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    assert yaml.safe_load(write_schema(path, "output_schema", schema, version)) == {
        "output_schema": schema
    }
