"""The ids of runs, sessions and batches: their form, and their order by creation time."""

from __future__ import annotations

import re
import time

from agent_coordinator._ids import new_id

_FORM = re.compile(r"(run|ses|bat)_[0-9a-f]{28}")


def _next_millisecond() -> None:
    """Wait until the clock's milliseconds have moved on."""
    now = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 == now:
        time.sleep(0.0005)


def test_an_id_is_its_prefix_and_28_hex_digits() -> None:
    for prefix in ("run", "ses", "bat"):
        made = new_id(prefix)
        assert _FORM.fullmatch(made) and made.startswith(f"{prefix}_"), made


def test_ids_sort_by_when_they_were_made() -> None:
    made = []
    for _ in range(20):
        made.append(new_id("run"))
        _next_millisecond()
    assert sorted(made) == made


def test_ids_made_in_one_millisecond_differ() -> None:
    made = [new_id("run") for _ in range(10_000)]
    assert len(set(made)) == len(made)
    # Their first 12 digits are the time: the ones of one millisecond share them and differ after.
    assert len({run_id[4:16] for run_id in made}) < len(made)
