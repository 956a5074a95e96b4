from __future__ import annotations

import json

import pytest
from pydantic import JsonValue

from agent_executor._redaction import (
    REDACTED,
    redact,
    redact_json_bytes,
    redact_json_lines,
    redact_json_text,
    redact_text,
    remember_secret,
)

# Real key formats, made up: the shapes the configured key may have.
GROQ = "gsk_" + "Qw3rTy8uIoP4aSdF" * 3
HUGGING_FACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz12"
HEX = "3f9a1c0b7d2e4f6a8b9c0d1e2f3a4b5c"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PLAIN = "Tr0ub4dor-and-3-more"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"key {GROQ} used", GROQ),
        (f"key {HUGGING_FACE}.", HUGGING_FACE),
        (f"key={HEX}", HEX),
        (f"token {JWT}", JWT),
        ("OPENAI_API_KEY=abc123def456", "abc123def456"),
        ("export ANTHROPIC_API_KEY='quoted value here'", "quoted value here"),
        ("curl ...?token=t0k3nValue&page=2", "t0k3nValue"),
        ("password=hunter2!", "hunter2!"),
        ("db: https://admin:s3cr3t-pw@db.example.com/app", "s3cr3t-pw"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("Authorization: Bearer abc.def.ghi-123", "abc.def.ghi-123"),
        ("x-api-key: plain-looking", "plain-looking"),
        ("sk-proj-" + "A1b2C3d4" * 3, "A1b2C3d4A1b2C3d4"),
        ("AKIAIOSFODNN7EXAMPLE in a log", "AKIAIOSFODNN7EXAMPLE"),
        ("ghp_" + "a1B2c3D4e5" * 3, "a1B2c3D4e5a1B2c3D4e5"),
    ],
)
def test_secret_shapes_and_names_are_redacted(text: str, secret: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert REDACTED in redacted


def test_the_configured_key_is_redacted_exactly_whatever_its_shape() -> None:
    remember_secret(PLAIN)
    text = f"the server said: Incorrect API key provided: {PLAIN}. Check {PLAIN.upper()}"
    assert redact_text(text) == (
        f"the server said: Incorrect API key provided: {REDACTED}. Check {REDACTED}"
    )


def test_placeholder_keys_are_not_secrets() -> None:
    remember_secret("ollama")
    remember_secret(None)
    assert redact_text("ollama runs qwen3") == "ollama runs qwen3"


@pytest.mark.parametrize(
    "text",
    [
        "use scikit-learn (sk-learn) to assess risk-management-framework-for-2026",
        "input_tokens=12 max_tokens: 100 tokens used",
        "the idempotency key per charge; a password policy; bearer of news",
        "sha256 " + "0123456789abcdef" * 4,  # 64 hex digits: a digest, not a key
        "run 12345678901234567890123456789012 is a number",
        "see https://docs.example.com/guide@v2",
        f"build zz{HEX} and {HEX}_x and {HEX}{HEX}",  # inside a word, or longer: not a key
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) is text


def test_identifiers_under_id_and_hash_keys_are_kept() -> None:
    inner = json.dumps({"trace_id": HEX, "key": HEX})
    line = json.dumps({"run_id": HEX, "schema_hash": HEX, "note": f"key {HEX}", "raw": inner})
    assert json.loads(redact_json_text(line)) == {
        "run_id": HEX,
        "schema_hash": HEX,
        "note": f"key {REDACTED}",
        "raw": json.dumps({"trace_id": HEX, "key": REDACTED}),
    }
    compact = json.dumps({"run_id": HEX, "key": HEX}, separators=(",", ":"))
    assert json.loads(redact_json_text(compact)) == {"run_id": HEX, "key": REDACTED}
    assert redact_text(f"{HEX} first") == f"{REDACTED} first"


def test_json_stays_valid_json_whatever_is_redacted() -> None:
    document: JsonValue = {
        "password": "correct horse battery",
        "token": 12345,
        "secret": None,
        "text": 'a "password": "inner" and token=abc"def',
        "raw_output": json.dumps({"api_key": "zzz yyy", "ok": 1}),
        "usage": {"input_tokens": 3},
    }
    out = json.loads(redact_json_bytes(json.dumps(document).encode()))
    assert out == {
        "password": REDACTED,
        "token": REDACTED,
        "secret": None,
        "text": f'a "password": "{REDACTED}" and token={REDACTED}"def',
        "raw_output": json.dumps({"api_key": REDACTED, "ok": 1}),
        "usage": {"input_tokens": 3},
    }


def test_a_secret_key_holding_an_object_is_redacted_whole() -> None:
    document = {"headers": {"Authorization": {"scheme": "x", "value": "y"}}, "X_API_KEY": ["n"]}
    out = json.loads(redact_json_text(json.dumps(document)))
    assert out == {"headers": {"Authorization": REDACTED}, "X_API_KEY": REDACTED}


def test_structural_redact_walks_keys_and_values() -> None:
    value: JsonValue = {"api_key": "short", "list": [f"k {GROQ}", 1, None], "count": 3}
    assert redact(value) == {"api_key": REDACTED, "list": [f"k {REDACTED}", 1, None], "count": 3}


LINES: list[JsonValue] = [
    {"run_id": HEX, "note": f"key {HEX}", "text": "nothing here"},
    {"password": "correct horse", "token": 12345, "usage": {"input_tokens": 3}},
    {"text": 'an open password="abc and no close'},  # a quote (escaped in JSON) left open
    {"note": 'say "hi" and sk-proj-' + "A1b2C3d4" * 3},
    {"headers": {"Authorization": {"scheme": "x"}}},  # needs the structural redaction
    {"raw_output": json.dumps({"api_key": "zzz yyy"}), "jwt": JWT},
]


@pytest.mark.parametrize("count", [1, 2, 3, len(LINES)])
def test_lines_redacted_together_are_each_line_redacted(count: int) -> None:
    for start in range(len(LINES) - count + 1):
        lines = [json.dumps(doc, separators=(",", ":")).encode() for doc in LINES[start:][:count]]
        expected = b"".join(redact_json_bytes(line) + b"\n" for line in lines)
        assert redact_json_lines(b"".join(line + b"\n" for line in lines)) == expected
        assert redact_json_lines(b"\n".join(lines)) == expected[:-1]  # no newline at the end
        for line in redact_json_lines(expected).splitlines():
            json.loads(line)


def test_lines_with_nothing_to_redact_come_back_as_they_were() -> None:
    data = b'{"run_id":"' + HEX.encode() + b'","n":1}\n{"text":"plain"}\n'
    assert redact_json_lines(data) is data
