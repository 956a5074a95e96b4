from __future__ import annotations

import os
import random
import uuid

import pytest

from agent_executor.run_ids import new_run_id


def test_run_ids_are_shaped_as_version_4_uuids_and_distinct() -> None:
    ids = [new_run_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for run_id in ids[:1000]:
        parsed = uuid.UUID(hex=run_id)
        assert parsed.hex == run_id and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_programs_seed_does_not_make_the_ids_repeat() -> None:
    random.seed(7)
    first = new_run_id()
    random.seed(7)
    assert new_run_id() != first


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is not available on this platform")
def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next id and leave at once
        os.write(writer, new_run_id().encode())
        os._exit(0)
    os.close(writer)
    parents = new_run_id()
    with os.fdopen(reader, "rb") as pipe:
        childs = pipe.read().decode()
    os.waitpid(pid, 0)
    assert len(childs) == 32 and childs != parents
