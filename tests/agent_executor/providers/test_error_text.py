"""How long a rate-limited reply asks to wait: ``retry_after_s``."""

from __future__ import annotations

import httpx

from agent_executor._providers.error_text import retry_after_s


def test_retry_after_headers_in_the_order_the_sdks_read_them() -> None:
    assert retry_after_s(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert retry_after_s(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert retry_after_s(httpx.Headers({})) is None


def test_openais_reset_durations_take_the_longest() -> None:
    headers = httpx.Headers(
        {"x-ratelimit-reset-requests": "1m6s", "x-ratelimit-reset-tokens": "250ms"}
    )
    assert retry_after_s(headers) == 66.0
    assert retry_after_s(httpx.Headers({"x-ratelimit-reset-tokens": "20ms"})) == 0.02
