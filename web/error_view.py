"""How the UI tells a person about an error, the one way every page uses: the sentence of the
error's `message_key` in the UI language (what happened and one thing to do), a button where
one helps (Open settings, Open the library, Retry), and the technical details (str(exc), the
exception's class, setting names, variables, commands) only behind a "details" toggle.

Anything that is not a UserError is a bug and says so in words. It never shows a traceback
outside the details, and never builds a sentence from English exception text.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from nicegui import ui

from actors import USER_ERRORS
from web.i18n import TEXTS, Texts

Action = Literal["settings", "library", "retry"]
Retry = Callable[[], Any]

ACTION_PATHS: dict[Action, str] = {"settings": "/settings", "library": "/library"}
_ACTION_LABELS: dict[Action, str] = {
    "settings": "error.open_settings",
    "library": "error.open_library",
    "retry": "error.retry",
}
# The sentence says to go there: the button takes the person there.
_GO_TO: dict[str, Action] = {
    "error.config_invalid": "settings",
    "error.ca_bundle_invalid": "settings",
    "error.prompt_bundle_invalid": "settings",
    "error.trace_artifact_unavailable": "settings",
    "spend.cap_reached": "settings",
    "error.document_unreadable": "library",
    "error.document_no_blocks": "library",
    "error.snapshot_damaged": "library",
}
_PROVIDER_SETTINGS_CODES = frozenset(
    {"unauthorized", "bad_request", "bad_response", "connection", "wrong_dimension", "quota"}
)
# Errors where the same action again may work (the sentence says "try again").
_RETRY_KEYS = frozenset(
    {"error.failed", "error.writer_busy", "error.trace_store", "error.diagnostic_bundle"}
)


def _variants(exc: BaseException) -> list[str]:
    """The attributes that refine a message key, most general first: a provider error's
    code then cause, a spending cap's period."""
    out = []
    for name in ("code", "cause", "period"):
        value = getattr(exc, name, "")
        if isinstance(value, str) and value:
            out.append(value)
    return out


def error_key(exc: BaseException) -> str:
    """The most specific key of the table that tells this error; "error.bug" for a bug."""
    if not isinstance(exc, USER_ERRORS):
        return "error.bug"
    key = str(getattr(exc, "message_key", "error.failed"))
    if key not in TEXTS:
        key = "error.failed"
    for variant in _variants(exc):
        if f"{key}.{variant}" not in TEXTS:
            break
        key = f"{key}.{variant}"
    return key


def reason_words(t: Texts, reason: str) -> str:
    """A termination reason (budget, tool_call_limit…) in words; an unknown one as it is."""
    key = f"tr.reason.{reason}"
    return t(key) if key in TEXTS else reason


def ended_sentence(t: Texts, reason: str, model_error: str | None = None, cause: str = "") -> str:
    """Why a question ended without an answer, in the UI language: the chat error's own
    sentence (by code, then cause) for a failed model call whose code is known, else the
    reason's."""
    if reason == "model_error" and model_error:
        key = f"error.chat_failed.{model_error}"
        if key in TEXTS:
            return t(f"{key}.{cause}" if f"{key}.{cause}" in TEXTS else key)
    key = f"ended.{reason}"
    return t(key if key in TEXTS else "ended.unknown")


def error_sentence(t: Texts, exc: BaseException) -> str:
    """What happened and one thing to do, in the UI language, with the error's own figures."""
    key = error_key(exc)
    values: dict[str, Any] = {k: v for k, v in vars(exc).items() if not k.startswith("_")}
    try:
        return t(key, **values) if values else t(key)
    except (KeyError, ValueError, IndexError, TypeError):
        # A sentence naming a figure this error does not carry: the general one of its kind.
        return t("error.failed")


def error_details(exc: BaseException) -> str:
    """The technical story, for the details toggle: class, message, status, vendor's words."""
    lines = [f"{type(exc).__name__}: {exc}"]
    for name in ("status", "vendor_message", "cause"):
        value = getattr(exc, name, None)
        if value not in (None, ""):
            lines.append(f"{name}: {value}")
    if not isinstance(exc, USER_ERRORS):
        lines.append("".join(traceback.format_exception(exc)).rstrip())
    return "\n".join(lines)


def error_action(exc: BaseException, *, can_retry: bool) -> Action | None:
    """The one button that helps with this error, if any."""
    key = error_key(exc)
    base = str(getattr(exc, "message_key", ""))
    if base in _GO_TO:
        return _GO_TO[base]
    code = getattr(exc, "code", None)
    if base in ("error.chat_failed", "error.embedding_failed"):
        if code in _PROVIDER_SETTINGS_CODES:
            return "settings"
        if code == "no_balance" and base == "error.embedding_failed":
            return "settings"  # the built-in model needs no balance
        return "retry" if can_retry and getattr(exc, "retryable", False) else None
    if can_retry and (key == "error.bug" or base in _RETRY_KEYS):
        return "retry"
    return None


def go_button(t: Texts, action: Literal["settings", "library"]) -> ui.button:
    """The button that takes the person where the sentence says to go."""
    path = ACTION_PATHS[action]
    return (
        ui.button(t(_ACTION_LABELS[action]), on_click=lambda: ui.navigate.to(path))
        .props("outline dense no-caps")
        .mark("error-action")
    )


def ended_action(reason: str, model_error: str | None) -> Literal["settings", "library"] | None:
    """Where to go about a question that ended without an answer, if anywhere helps."""
    if reason == "model_error" and model_error in _PROVIDER_SETTINGS_CODES:
        return "settings"
    if reason in ("budget", "tool_call_limit"):
        return "settings"
    if reason == "collection_unavailable":
        return "library"
    return None


def details_toggle(t: Texts, text: str) -> ui.expansion:
    """The "details" toggle: closed, with the technical text in monospace inside."""
    with (
        ui.expansion(t("error.details"))
        .props("dense")
        .classes("w-full text-xs")
        .mark("error-details") as toggle
    ):
        ui.label(text).classes("text-xs font-mono whitespace-pre-wrap break-all").mark(
            "error-details-text"
        )
    return toggle


def error_panel(
    t: Texts,
    exc: BaseException,
    *,
    retry: Retry | None = None,
    here: str | None = None,
    close: Callable[[], object] | None = None,
) -> None:
    """The error in place: sentence, the one helpful button (none that leads to `here`), a
    close button when `close` is given, and the details toggle."""
    ui.label(error_sentence(t, exc)).classes("text-sm text-red-800").mark("error-message")
    action = error_action(exc, can_retry=retry is not None)
    if action is not None and here is not None and ACTION_PATHS.get(action) == here:
        action = None
    with ui.row().classes("gap-2 items-center"):
        if action == "retry" and retry is not None:

            async def again() -> None:
                if close is not None:
                    close()
                result = retry()
                if isinstance(result, Awaitable):
                    await result

            ui.button(t("error.retry"), icon="refresh", on_click=again).props(
                "outline dense no-caps"
            ).mark("error-action")
        elif action == "settings" or action == "library":
            go_button(t, action)
        if close is not None:
            ui.button(t("error.close"), on_click=close).props("flat dense no-caps").mark(
                "error-close"
            )
    details_toggle(t, error_details(exc))


def show_error(
    t: Texts, exc: BaseException, *, retry: Retry | None = None, here: str | None = None
) -> None:
    """Tell the person in a dialog that stays until closed (a toast would vanish before the
    details could be read)."""
    with ui.dialog().mark("error-dialog") as dialog, ui.card().classes("w-[36rem] max-w-full"):
        error_panel(t, exc, retry=retry, here=here, close=dialog.close)
    dialog.open()
