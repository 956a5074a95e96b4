"""Errors sent inside a stream are typed as the same error before the stream would be."""

from __future__ import annotations

import pytest

from agent_executor._providers.stream_errors import stream_error, unfinished_stream
from agent_executor._redaction import remember_secret
from tests.fake_llm import Json


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"error": {"code": 429, "message": "slow down"}}, "provider_rate_limited"),
        ({"error": {"code": "503", "message": "busy"}}, "provider_server_error"),
        ({"error": {"code": True, "message": "odd"}}, "provider_error"),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "x"}},
            "provider_server_error",
        ),
        (
            {"error": {"type": "authentication_error", "message": "x"}},
            "provider_authentication_error",
        ),
        ({"error": {"type": "not_found_error", "message": "x"}}, "provider_bad_request"),
        (
            {
                "error": {
                    "code": "context_length_exceeded",
                    "type": "invalid_request_error",
                    "message": "too long",
                }
            },
            "provider_context_length_exceeded",
        ),
        (
            {"error": {"code": 500, "message": "Input should be a valid string"}},
            "provider_bad_request",
        ),
        ({"message": "no wrapper", "type": "server_error"}, "provider_server_error"),
        ("plain text", "provider_error"),
    ],
)
def test_kind_follows_code_then_type(body: Json, kind: str) -> None:
    error = stream_error("p", body)

    assert (error.kind, error.status, error.provider) == (kind, None, "p")
    assert error.body == body


def test_message_is_named_as_from_the_stream_and_redacted() -> None:
    remember_secret("sk-streamed-secret")
    body: Json = {
        "error": {"message": "bad key sk-streamed-secret", "type": "authentication_error"}
    }

    error = stream_error("p", body)

    assert "sk-streamed-secret" not in str(error)
    assert "error in the stream: bad key" in str(error)
    assert "sk-streamed-secret" not in str(error.body)


def test_the_sdk_message_stands_in_for_a_missing_one() -> None:
    assert "from the SDK" in str(stream_error("p", {"error": {}}, "from the SDK"))


def test_an_unfinished_stream_is_a_connection_error_saying_what_never_came() -> None:
    error = unfinished_stream("p", "message_stop")

    assert error.kind == "provider_connection_error"
    assert "message_stop" in str(error)
