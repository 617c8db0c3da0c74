"""What the ask page shows while a request runs, folded from the request's events.

Pure state (no UI toolkit): the answer text with citation markers shown as [n], the budget
gauge's figures, the current activity, and what must be disclosed (evidence refused by the
budget, early finalisation). It never shows a raw citation id as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors import (
    AdmissionDecided,
    AnswerDelta,
    AnswerRetracted,
    Budgets,
    ConversationTrimmed,
    Event,
    Evidence,
    Finalizing,
    MarkerNumbers,
    ModelCallFinished,
    RequestFinished,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)

_TOOL_DETAIL_KEYS = ("query", "term", "section_paths", "title_contains", "source")  # never raw ids


@dataclass
class Gauge:
    """Budget figures: the latest context size, chat tokens used so far, tool calls."""

    budgets: Budgets
    context_tokens: int = 0
    used_tokens: int = 0
    tool_calls: int = 0

    @property
    def context_share(self) -> float:
        return min(1.0, self.context_tokens / max(1, self.budgets.max_context_tokens))

    @property
    def request_share(self) -> float:
        return min(1.0, self.used_tokens / max(1, self.budgets.max_request_tokens))

    @property
    def tools_share(self) -> float:
        return min(1.0, self.tool_calls / max(1, self.budgets.max_tool_calls))


@dataclass
class Activity:
    """What is happening now, as an i18n key and its values."""

    key: str
    values: dict[str, object] = field(default_factory=dict)


@dataclass
class LiveAnswer:
    budgets: Budgets
    text: str = ""  # the answer so far, markers rewritten as [n] / [n?]
    finished: RequestFinished | None = None
    activity: Activity | None = None
    refused: list[str] = field(default_factory=list)  # evidence the budget kept out
    finalizing: str | None = None
    trimmed: str | None = None
    retractions: int = 0
    model_error: str | None = None  # the code of the last failed model call's ChatError
    model_error_cause: str = ""  # and its cause (a web page, TLS…)
    gauge: Gauge = field(init=False)
    evidence: Evidence = field(default_factory=Evidence)
    _numbers: MarkerNumbers = field(init=False)

    def __post_init__(self) -> None:
        self.gauge = Gauge(self.budgets)
        self._numbers = MarkerNumbers(self.evidence)

    def feed(self, event: Event) -> None:
        """Fold one event in. Returns nothing: read the fields afterwards."""
        if isinstance(event, AnswerDelta):
            self.text += self._numbers.feed(event.text)
            self.activity = None
        elif isinstance(event, AnswerRetracted):
            self.text = ""
            self.retractions += 1
            self._numbers = MarkerNumbers(self.evidence)
            self.activity = Activity("ask.retracted", {"reason": event.reason})
        elif isinstance(event, TurnStarted):
            self.gauge.context_tokens = event.prompt_tokens
            key = "ask.final_turn" if event.final else "ask.thinking"
            self.activity = Activity(key, {"turn": event.turn})
        elif isinstance(event, ModelCallFinished):
            if not event.ok:
                self.model_error, self.model_error_cause = event.error_code, event.error_cause
            if event.usage is not None:
                self.gauge.used_tokens += event.usage.prompt_tokens + event.usage.completion_tokens
        elif isinstance(event, ToolCallStarted):
            self.activity = Activity("ask.tool", {"tool": event.tool, "detail": _detail(event)})
        elif isinstance(event, ToolCallFinished):
            self.gauge.tool_calls = max(self.gauge.tool_calls, event.call)
            if event.harness_status == "ok" and event.payload is not None:
                self.evidence.add_result(event.tool, event.payload)
            self.activity = Activity(
                "ask.tool_done", {"tool": event.tool, "outcome": event.outcome}
            )
        elif isinstance(event, AdmissionDecided):
            self.gauge.context_tokens = event.prompt_tokens
            self.gauge.used_tokens = max(self.gauge.used_tokens, event.used_tokens)
            if event.verdict != "accepted":
                self.refused.append(
                    f"{event.tool or 'tool'}: {event.verdict} "
                    f"({event.needed} > {event.available} tokens)"
                )
        elif isinstance(event, Finalizing):
            self.finalizing = event.message
        elif isinstance(event, ConversationTrimmed):
            self.trimmed = event.reason
        elif isinstance(event, RequestFinished):
            self._finish(event)

    def _finish(self, event: RequestFinished) -> None:
        self.finished = event
        self.activity = None
        c = event.counters
        self.gauge.used_tokens = c.used_tokens or self.gauge.used_tokens
        self.gauge.context_tokens = c.context_tokens or self.gauge.context_tokens
        self.gauge.tool_calls = c.tool_calls
        if event.answer is not None:
            numbers = MarkerNumbers(self.evidence)  # the same numbering as the citations
            self.text = numbers.feed(event.answer) + numbers.flush()
        else:
            self.text = ""

    @property
    def disclose_budget(self) -> bool:
        return bool(self.refused) or self.finalizing is not None


def _detail(event: ToolCallStarted) -> str:
    for key in _TOOL_DETAIL_KEYS:
        value = event.args.get(key)
        if value:
            return str(value) if not isinstance(value, list) else ", ".join(map(str, value))
    return ""
