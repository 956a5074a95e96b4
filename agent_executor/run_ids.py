"""New run ids: random, in the form of a version-4 UUID's hex, without a system call per run.

``uuid.uuid4()`` reads 16 bytes from the operating system for every id, a system call on every
run. Run ids need to be unique, not secret: they come from a generator of this module's own,
seeded from the operating system's randomness when the module is imported and again in every
forked child (so a child never repeats its parent's ids). A program's ``random.seed(...)`` does
not touch it, so two programs seeded alike still make different ids.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_run_id"]

_VERSION_4 = 4 << 76
_VARIANT_RFC = 0x8 << 60
_CLEAR = ~((0xF << 76) | (0xC << 60))  # the version nibble and the variant's two bits

_generator = random.Random(os.urandom(32))


def new_run_id() -> str:
    """Return a new run id: 32 lowercase hex digits, shaped as ``uuid.uuid4().hex`` is.

    Returns:
        The id (122 random bits).
    """
    bits = (_generator.getrandbits(128) & _CLEAR) | _VERSION_4 | _VARIANT_RFC
    return f"{bits:032x}"


def _reseed() -> None:
    _generator.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)
