"""One API key: what is stored (masked, never in full), a field to paste a new one, save, and a
connectivity test whose verdict is one sentence in the UI language (what is wrong and one thing
to do), a "Test again" button after a failure, and the technical verdict only under details.
Used by the settings page and the wizard.

The pasted value is cleared from the field once saved; it is never logged or shown back.
"""

from __future__ import annotations

from collections.abc import Callable

from nicegui import ui

from actors import ENV_NAMES, App, Config, KeyCheck, KeyName
from web.error_view import details_toggle
from web.i18n import TEXTS, Texts
from web.shell import show_error


def check_text(t: Texts, check: KeyCheck) -> str:
    """The verdict as a person reads it, in the UI language, with the check's facts."""
    values: dict[str, object] = {"ms": round(check.latency_ms), **check.facts}
    if check.ok:
        key = "check.ok.embedding" if "expected" in check.facts else "check.ok.deepseek"
    else:
        key = f"check.{check.code}" if f"check.{check.code}" in TEXTS else "check.bad_request"
    try:
        return t(key, **values)
    except (KeyError, ValueError, IndexError):  # a fact the sentence needs is missing
        return t("error.failed")


def check_details(check: KeyCheck) -> str:
    facts = ", ".join(f"{k}={v}" for k, v in sorted(check.facts.items()))
    return f"{check.code}: {check.message}" + (f"\n{facts}" if facts else "")


def shown_key(app: App, t: Texts, name: KeyName) -> str:
    """What is stored, in words: nothing yet, a key (its last characters when it is long)."""
    if not app.key_is_set(name):
        return t("set.key.not_set")
    shown = app.key_shown(name)
    return t("set.key.current", shown=t("set.key.set_short") if shown.startswith("(") else shown)


class KeyField:
    def __init__(
        self,
        app: App,
        t: Texts,
        name: KeyName,
        *,
        config: Callable[[], Config] | None = None,
    ) -> None:
        self.app = app
        self.t = t
        self.name = name
        self.config = config  # settings to test with (the wizard tests before saving them)
        self.last_check: KeyCheck | None = None
        with ui.column().classes("w-full gap-1").mark(f"key-{name}"):
            ui.label(t(f"set.key.{name}")).classes("text-sm font-semibold")
            self.current = ui.label().classes("text-xs text-slate-500").mark(f"key-{name}-current")
            with ui.row().classes("w-full items-center no-wrap"):
                self.value = (
                    ui.input(
                        placeholder=t("set.key.placeholder"),
                        password=True,
                        password_toggle_button=True,
                    )
                    .props("autocomplete=off")
                    .classes("grow")
                    .mark(f"key-{name}-input")
                )
                ui.button(t("set.key.save"), on_click=self.save).props("outline no-caps").mark(
                    f"key-{name}-save"
                )
                ui.button(t("set.key.test"), on_click=self.test).props("outline no-caps").mark(
                    f"key-{name}-test"
                )
            self.message = ui.label().classes("text-sm").mark(f"key-{name}-message")
            self.after = ui.column().classes("w-full gap-1")  # Test again and the details
        self._show_current()

    def _show_current(self) -> None:
        self.current.set_text(shown_key(self.app, self.t, self.name))

    def save(self) -> bool:
        raw = (self.value.value or "").strip()
        self.after.clear()
        if not raw:
            self.message.set_text(self.t("set.key.empty"))
            return False
        try:
            stored = self.app.store_key(self.name, raw)
        except Exception as exc:  # shown to the person
            show_error(self.t, exc)
            return False
        self.value.set_value("")
        self._show_current()
        if stored.where == "keyring":
            self.message.set_text(self.t("set.key.stored_keyring", shown=stored.shown_as))
        else:
            self.message.set_text(self.t("set.key.stored_session", shown=stored.shown_as))
            with self.after:
                details_toggle(self.t, self.t("set.key.env_details", env=ENV_NAMES[self.name]))
        return True

    async def test(self) -> KeyCheck | None:
        """Test the pasted key (or the stored one); a pasted key that works is saved."""
        raw = (self.value.value or "").strip() or None
        self.after.clear()
        self.message.classes(replace="text-sm")
        self.message.set_text(self.t("set.key.testing"))
        try:
            check = await self.app.test_key(self.name, raw, self.config() if self.config else None)
        except Exception as exc:  # shown to the person
            show_error(self.t, exc)
            self.message.set_text("")
            return None
        self.last_check = check
        text = check_text(self.t, check)
        if check.ok and raw is not None and self.save():
            text = f"{text} {self.message.text}"
        self.message.set_text(text)
        self.message.classes(
            replace="text-sm " + ("text-green-700" if check.ok else "text-red-700")
        )
        with self.after:
            if not check.ok and check.code != "no_key":
                ui.button(self.t("check.test_again"), icon="refresh", on_click=self.test).props(
                    "outline dense no-caps"
                ).mark(f"key-{self.name}-retest")
            details_toggle(self.t, check_details(check)).mark(
                f"error-details key-{self.name}-details"
            )
        return check
