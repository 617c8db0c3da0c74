"""One API key: what is stored (masked, never in full), a field to paste a new one, save, and a
connectivity test that says exactly what is wrong. Used by the settings page and the wizard.

The pasted value is cleared from the field once saved; it is never logged or shown back.
"""

from __future__ import annotations

from collections.abc import Callable

from nicegui import ui

from actors import ENV_NAMES, App, Config, KeyCheck, KeyName
from web.i18n import Texts
from web.shell import show_error


def check_text(t: Texts, check: KeyCheck) -> str:
    if check.ok:
        return t("set.key.ok", ms=round(check.latency_ms), message=check.message)
    return t("set.key.failed", code=check.code, message=check.message)


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
                ui.button(t("set.key.save"), on_click=self.save).props("outline").mark(
                    f"key-{name}-save"
                )
                ui.button(t("set.key.test"), on_click=self.test).props("outline").mark(
                    f"key-{name}-test"
                )
            self.message = ui.label().classes("text-sm").mark(f"key-{name}-message")
        self._show_current()

    def _show_current(self) -> None:
        self.current.set_text(self.t("set.key.current", shown=self.app.key_shown(self.name)))

    def save(self) -> bool:
        raw = (self.value.value or "").strip()
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
        key = "set.key.stored_keyring" if stored.where == "keyring" else "set.key.stored_session"
        self.message.set_text(self.t(key, shown=stored.shown_as, env=ENV_NAMES[self.name]))
        return True

    async def test(self) -> KeyCheck | None:
        """Test the pasted key (or the stored one); a pasted key that works is saved."""
        raw = (self.value.value or "").strip() or None
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
            text = f"{text} — {self.message.text}"
        self.message.set_text(text)
        self.message.classes(
            replace="text-sm " + ("text-green-700" if check.ok else "text-red-700")
        )
        return check
