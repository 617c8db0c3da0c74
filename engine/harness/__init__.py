"""The harness: the agent loop of one request (protocol parser, budgets and the one admission,
observations, citations, events) over a pinned snapshot. Callers import from here.

It runs no long-lived task of its own; actors/harness.py runs requests as tasks.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.harness.budget import Admission, Budgets, Counters, admit, check_final, check_turn
    from engine.harness.citations import Citation, Evidence, MarkerNumbers, resolve
    from engine.harness.events import (
        ANSWERED,
        EVENT_DECODER,
        EVENT_ENCODER,
        AdmissionDecided,
        AnswerDelta,
        AnswerRetracted,
        ConversationTrimmed,
        Event,
        Finalizing,
        ModelCallFinished,
        ModelCallStarted,
        ProtocolErrorSeen,
        RequestFinished,
        RequestStarted,
        TerminationReason,
        ToolCallFinished,
        ToolCallStarted,
        TurnStarted,
    )
    from engine.harness.history import History
    from engine.harness.injection import InjectionKind, Suspicion, detect, scan_result
    from engine.harness.machine import (
        WHITELIST,
        ChatModel,
        Deps,
        EarlierTurn,
        Limits,
        Request,
        ToolCallOutcome,
        ToolRunner,
        run_manifest,
        run_request,
    )
    from engine.harness.observation import HARNESS_STATUSES, HarnessStatus, Observation
    from engine.harness.protocol import (
        PROTOCOL_VERSION,
        FinishAction,
        FinishStream,
        ProtocolViolation,
        ToolAction,
        parse_reply,
    )

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "Admission": ("engine.harness.budget", "Admission"),
    "Budgets": ("engine.harness.budget", "Budgets"),
    "Counters": ("engine.harness.budget", "Counters"),
    "admit": ("engine.harness.budget", "admit"),
    "check_final": ("engine.harness.budget", "check_final"),
    "check_turn": ("engine.harness.budget", "check_turn"),
    "Citation": ("engine.harness.citations", "Citation"),
    "Evidence": ("engine.harness.citations", "Evidence"),
    "MarkerNumbers": ("engine.harness.citations", "MarkerNumbers"),
    "resolve": ("engine.harness.citations", "resolve"),
    "ANSWERED": ("engine.harness.events", "ANSWERED"),
    "EVENT_DECODER": ("engine.harness.events", "EVENT_DECODER"),
    "EVENT_ENCODER": ("engine.harness.events", "EVENT_ENCODER"),
    "AdmissionDecided": ("engine.harness.events", "AdmissionDecided"),
    "AnswerDelta": ("engine.harness.events", "AnswerDelta"),
    "AnswerRetracted": ("engine.harness.events", "AnswerRetracted"),
    "ConversationTrimmed": ("engine.harness.events", "ConversationTrimmed"),
    "Event": ("engine.harness.events", "Event"),
    "Finalizing": ("engine.harness.events", "Finalizing"),
    "ModelCallFinished": ("engine.harness.events", "ModelCallFinished"),
    "ModelCallStarted": ("engine.harness.events", "ModelCallStarted"),
    "ProtocolErrorSeen": ("engine.harness.events", "ProtocolErrorSeen"),
    "RequestFinished": ("engine.harness.events", "RequestFinished"),
    "RequestStarted": ("engine.harness.events", "RequestStarted"),
    "TerminationReason": ("engine.harness.events", "TerminationReason"),
    "ToolCallFinished": ("engine.harness.events", "ToolCallFinished"),
    "ToolCallStarted": ("engine.harness.events", "ToolCallStarted"),
    "TurnStarted": ("engine.harness.events", "TurnStarted"),
    "History": ("engine.harness.history", "History"),
    "InjectionKind": ("engine.harness.injection", "InjectionKind"),
    "Suspicion": ("engine.harness.injection", "Suspicion"),
    "detect": ("engine.harness.injection", "detect"),
    "scan_result": ("engine.harness.injection", "scan_result"),
    "WHITELIST": ("engine.harness.machine", "WHITELIST"),
    "ChatModel": ("engine.harness.machine", "ChatModel"),
    "Deps": ("engine.harness.machine", "Deps"),
    "EarlierTurn": ("engine.harness.machine", "EarlierTurn"),
    "Limits": ("engine.harness.machine", "Limits"),
    "Request": ("engine.harness.machine", "Request"),
    "ToolCallOutcome": ("engine.harness.machine", "ToolCallOutcome"),
    "ToolRunner": ("engine.harness.machine", "ToolRunner"),
    "run_manifest": ("engine.harness.machine", "run_manifest"),
    "run_request": ("engine.harness.machine", "run_request"),
    "HARNESS_STATUSES": ("engine.harness.observation", "HARNESS_STATUSES"),
    "HarnessStatus": ("engine.harness.observation", "HarnessStatus"),
    "Observation": ("engine.harness.observation", "Observation"),
    "PROTOCOL_VERSION": ("engine.harness.protocol", "PROTOCOL_VERSION"),
    "FinishAction": ("engine.harness.protocol", "FinishAction"),
    "FinishStream": ("engine.harness.protocol", "FinishStream"),
    "ProtocolViolation": ("engine.harness.protocol", "ProtocolViolation"),
    "ToolAction": ("engine.harness.protocol", "ToolAction"),
    "parse_reply": ("engine.harness.protocol", "parse_reply"),
}

__all__ = [
    "ANSWERED",
    "EVENT_DECODER",
    "EVENT_ENCODER",
    "HARNESS_STATUSES",
    "PROTOCOL_VERSION",
    "WHITELIST",
    "Admission",
    "AdmissionDecided",
    "AnswerDelta",
    "AnswerRetracted",
    "Budgets",
    "ChatModel",
    "Citation",
    "ConversationTrimmed",
    "Counters",
    "Deps",
    "EarlierTurn",
    "Event",
    "Evidence",
    "Finalizing",
    "FinishAction",
    "FinishStream",
    "HarnessStatus",
    "History",
    "InjectionKind",
    "Limits",
    "MarkerNumbers",
    "ModelCallFinished",
    "ModelCallStarted",
    "Observation",
    "ProtocolErrorSeen",
    "ProtocolViolation",
    "Request",
    "RequestFinished",
    "RequestStarted",
    "Suspicion",
    "TerminationReason",
    "ToolAction",
    "ToolCallFinished",
    "ToolCallOutcome",
    "ToolCallStarted",
    "ToolRunner",
    "TurnStarted",
    "admit",
    "check_final",
    "check_turn",
    "detect",
    "parse_reply",
    "resolve",
    "run_manifest",
    "run_request",
    "scan_result",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
