from __future__ import annotations

from agent_contracts._suggest import did_you_mean, suggest


def test_case_and_separators_match_first() -> None:
    assert suggest("max_steps", ["maxSteps", "max_tokens"]) == "maxSteps"
    assert suggest("Triage", ["triage", "tester"]) == "triage"


def test_a_close_spelling_is_suggested_above_the_cutoff() -> None:
    assert suggest("sytem_prompt", ["system_prompt", "tools"]) == "system_prompt"
    assert suggest("zzz", ["system_prompt", "tools"]) is None
    assert suggest("minLenght", ["minLength"], cutoff=0.75) == "minLength"
    assert suggest("x-custom", ["minLength", "maxLength"], cutoff=0.75) is None


def test_a_known_name_is_never_suggested_to_itself() -> None:
    assert suggest("tools", ["tools"]) is None


def test_did_you_mean_renders_for_a_message() -> None:
    assert did_you_mean("tirage", ["triage"]) == " (did you mean 'triage'?)"
    assert did_you_mean("zzz", ["triage"]) == ""
