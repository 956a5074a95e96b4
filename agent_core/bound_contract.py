"""An output contract bound to one provider's profile: :class:`BoundContract`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_contracts.errors import ConfigError
from agent_contracts.messages import ToolCall
from agent_contracts.profiles import ProviderProfile
from agent_contracts.runs import JsonSchema
from agent_contracts.tools import ResponseFormat, ToolDefinition
from agent_core.dialects import Dialect
from agent_core.verdict import Verdict

if TYPE_CHECKING:
    from agent_core.contract import OutputContract

__all__ = ["BoundContract"]


@dataclass(frozen=True)
class BoundContract:
    """An output contract bound to one provider's profile: what one run sends and judges.

    Attributes:
        contract: The contract.
        profile: The provider's profile (its tool dialect, strict tools, native output).
    """

    contract: OutputContract
    profile: ProviderProfile

    @property
    def schema(self) -> JsonSchema:
        """The designer's schema."""
        return self.contract.schema

    @property
    def dialect(self) -> Dialect:
        """The dialect this provider is sent: its own when it takes strict tools, else neutral.

        A provider without strict tools gets the schema as written (``neutral``), which every
        OpenAI-compatible server and Anthropic's non-strict tools accept.
        """
        return self.profile.tool_dialect if self.profile.strict_tools else "neutral"

    def tool_definition(self) -> ToolDefinition:
        """Return ``submit_result`` as this provider is sent it."""
        return self.contract.tool_definition(self.dialect)

    def response_format(self) -> ResponseFormat:
        """Return the native structured-output request for this provider.

        Raises:
            ConfigError: The provider has no native structured output, or the schema cannot be
                used with it.
        """
        if not self.profile.native_output:
            raise ConfigError(
                "this provider's profile has no native structured output (native_output is "
                "false); use output_mode 'tool' or 'prompted', or override the profile"
            )
        return self.contract.response_format(self.dialect)

    def judge_text(
        self, text: str, *, extract: bool, strict_json_only: bool, cut_off: bool = False
    ) -> Verdict:
        """Judge a reply whose text should hold the answer as JSON (see the contract's)."""
        return self.contract.judge_text(
            text,
            self.dialect,
            extract=extract,
            strict_json_only=strict_json_only,
            cut_off=cut_off,
        )

    def judge_call(self, call: ToolCall, *, extract: bool, cut_off: bool = False) -> Verdict:
        """Judge one ``submit_result`` call's arguments (see the contract's)."""
        return self.contract.judge_call(call, self.dialect, extract=extract, cut_off=cut_off)

    def judge_reply_without_tool(
        self, text: str, *, extract: bool, strict_json_only: bool = False, cut_off: bool = False
    ) -> Verdict:
        """Judge a reply that called no tool where ``submit_result`` was required."""
        return self.contract.judge_reply_without_tool(
            text,
            self.dialect,
            extract=extract,
            strict_json_only=strict_json_only,
            cut_off=cut_off,
        )
