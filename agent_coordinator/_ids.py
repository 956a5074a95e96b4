"""The ids the service gives what it stores: runs, sessions and batches.

An id is its kind's prefix, 12 hex digits of the milliseconds since the epoch and 16 random hex
digits (``run_019ac4e2f3a1`` and 16 more): ids sort by when they were made, so the store's
indexes by id take a new row at their end, where the rows just written are, instead of on a page
anywhere among all the rows ever stored (on a store of 100,000 sessions, about 7 % of ``serve``'s
CPU a run, and half the pages a commit writes; ``bench/RESULTS.md``). The random digits keep two
ids made in the same millisecond apart, as likely to collide as two 64-bit random numbers.
"""

from __future__ import annotations

import secrets
import time

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """Return a new id of the kind ``prefix`` (``run``, ``ses``, ``bat``), as the module says."""
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(8)}"
