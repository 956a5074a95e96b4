"""The flags the subcommands share: what the run-option flags set, and a bad value refused."""

from __future__ import annotations

import argparse

import pytest

from agent_executor._cli.commands import UsageError
from agent_executor._cli.flags import run_options


def test_run_options() -> None:
    args = argparse.Namespace(max_retries=3, mode="prompted")
    options = run_options(args)
    assert (options.max_retries, options.output_mode) == (3, "prompted")
    assert run_options(argparse.Namespace(max_retries=None, mode=None)).model_fields_set == set()
    with pytest.raises(UsageError, match="--max-retries: "):
        run_options(argparse.Namespace(max_retries=-1, mode=None))
