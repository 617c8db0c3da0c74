"""The settings page: budgets, chat and embedding models and base URLs, prices and caps, proxy
and CA bundle, retention, trace mode and language, saved to config.toml only after validation,
plus the two keys with their tests, the running spending totals and the prompt bundles
(web/settings_spending.py, _bundles.py).

Each field shows the value in effect and where it comes from (default, saved, or an environment
variable, which wins over the file: that field is read-only and says so, the variable's name
under details). Keys are never settings: they go to the credential store through KeyField.
"""

from __future__ import annotations

from typing import Any, Literal

from nicegui import ui

from actors import ENV_NAMES, App, Config
from web import settings_maintenance
from web.error_view import details_toggle, error_panel
from web.i18n import LANGUAGES, Texts
from web.key_field import KeyField
from web.settings_bundles import BundlesCard
from web.settings_spending import spending_card
from web.shell import frame, show_error, texts

Source = Literal["default", "file", "env"]

# (section, key) per group; ("chat.price", key) is the nested price table.
GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "set.budget",
        (
            ("budget", "max_context_tokens"),
            ("budget", "max_request_tokens"),
            ("budget", "finalization_reserve_tokens"),
            ("budget", "max_tool_calls"),
        ),
    ),
    (
        "set.chat",
        (
            ("chat", "base_url"),
            ("chat", "model"),
            ("chat", "timeout_s"),
            ("chat", "max_output_tokens"),
            ("chat", "daily_cap"),
            ("chat", "monthly_cap"),
        ),
    ),
    (
        "set.prices",
        (
            ("chat.price", "input_cache_hit"),
            ("chat.price", "input_cache_miss"),
            ("chat.price", "output"),
            ("chat.price", "currency"),
        ),
    ),
    (
        "set.embedding",
        (
            ("embedding", "provider"),
            ("embedding", "base_url"),
            ("embedding", "model"),
            ("embedding", "dimensions"),
        ),
    ),
    ("set.ocr_group", (("ingest", "ocr"), ("ingest", "ocr_max_pages"))),
    ("set.network", (("network", "proxy"), ("network", "ca_bundle"))),
    (
        "set.retention",
        (("snapshots", "keep_last"), ("snapshots", "keep_days"), ("trace", "retention_days")),
    ),
    ("set.trace", (("trace", "mode"),)),
    ("set.language", (("ui", "language"),)),
)


def _value(config: Config, section: str, key: str) -> Any:
    obj: Any = config
    for part in section.split("."):
        obj = getattr(obj, part)
    return getattr(obj, key)


def _choices(t: Texts, section: str, key: str) -> dict[str, str] | None:
    if (section, key) == ("embedding", "provider"):
        return {v: t(f"set.provider.{v}") for v in ("local", "openai_compatible")}
    if (section, key) == ("trace", "mode"):
        return {v: t(f"set.trace_mode.{v}") for v in ("metadata", "full")}
    if (section, key) == ("ui", "language"):
        return {str(k): v for k, v in LANGUAGES.items()}
    return None


def _label(t: Texts, key: str) -> str:
    return t("set.trace_mode") if key == "mode" else t(f"set.{key}")


def env_variable(section: str, key: str) -> str:
    return f"CITEWISE_{section}_{key}".upper().replace(".", "_")


class Sources:
    """Where each setting's value in effect comes from: the environment (which wins), the
    saved file, or the default."""

    def __init__(self, app: App, file: Config) -> None:
        self.effective = app.config
        self.file = file
        self.default = Config()
        self.overridden = set(app.env_overrides())

    def of(self, section: str, key: str) -> Source:
        if f"{section}.{key}".replace("chat.price.", "chat.price_") in self.overridden:
            return "env"
        if _value(self.file, section, key) != _value(self.default, section, key):
            return "file"
        return "default"


class SettingsForm:
    """Inputs for a group of settings; `changes()` gives {section: {key: value}}, leaving out
    the fields an environment variable sets (their saved value stays as it is)."""

    def __init__(self, t: Texts, sources: Sources, fields: tuple[tuple[str, str], ...]) -> None:
        self.t = t
        self.fields: dict[tuple[str, str], Any] = {}
        self.kinds: dict[tuple[str, str], type] = {}
        for section, key in fields:
            source = sources.of(section, key)
            saved = _value(sources.file, section, key)
            value = _value(sources.effective, section, key) if source == "env" else saved
            choices = _choices(t, section, key)
            mark = f"setting-{section}.{key}"
            if choices is not None:
                element: Any = ui.select(choices, value=value, label=_label(t, key))
            elif isinstance(value, bool):
                element = ui.switch(_label(t, key), value=value)
            elif not isinstance(value, int | float):
                element = ui.input(_label(t, key), value=str(value))
            else:
                element = ui.number(_label(t, key), value=value)
            if source == "env":
                shown = choices.get(value, value) if choices else value
                saved_shown = choices.get(saved, saved) if choices else saved
                hint = t("set.env_field", value=shown, saved=saved_shown)
                element.props("readonly")
            else:
                hint = t(f"set.source.{source}")
            element.props(f'hint="{_attribute(hint)}"')
            self.fields[(section, key)] = element.classes("w-72").mark(f"{mark} source-{source}")
            self.kinds[(section, key)] = type(value)
            if source == "env":
                del self.fields[(section, key)]  # never written: the file keeps its own value

    def show_sources(self, sources: Sources) -> None:
        """After a save: each field says again where its value now comes from (a value just
        saved said "Default" until the page was opened again)."""
        for (section, key), element in self.fields.items():
            source = sources.of(section, key)
            element.props(f'hint="{_attribute(self.t(f"set.source.{source}"))}"')
            element.mark(f"setting-{section}.{key} source-{source}")

    def flag(self, t: Texts, refusal: str) -> str | None:
        """The field a refused save names first ("budget.max_tool_calls = -5 is not allowed…"):
        marked in red, its label returned; every other field's mark is cleared ("" clears
        them all)."""
        named = None
        for (section, key), element in self.fields.items():
            if named is None and refusal.startswith(f"{section}.{key} = "):
                named = _label(t, key)
                element.props(f'error error-message="{_attribute(t("set.field_invalid_here"))}"')
            else:
                element.props(remove="error error-message")
        return named

    def changes(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for (section, key), element in self.fields.items():
            value = element.value
            if self.kinds[(section, key)] is int and isinstance(value, float):
                value = int(value) if value.is_integer() else value  # 2.5 stays invalid
            top, _, nested = section.partition(".")
            target = out.setdefault(top, {})
            if nested:
                target = target.setdefault(nested, {})
            target[key] = value
        return out


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;")


def _env_banner(t: Texts, sources: Sources) -> None:
    if not sources.overridden:
        return
    with ui.column().classes("w-full gap-1 bg-blue-50 p-2 rounded").mark("env-banner"):
        ui.label(t("set.env_banner")).classes("text-sm").mark("env-note")
        lines = [
            t("set.env_details", variable=env_variable(*name.split(".", 1)), setting=name)
            for name in sorted(sources.overridden)
        ]
        details_toggle(t, "\n".join(lines))


def build(app: App) -> None:
    t = texts(app)
    frame(app, t, "/settings")
    try:
        config = app.file_settings()
    except Exception as exc:  # a damaged config.toml: say how to repair it
        show_error(t, exc, here="/settings")
        config = app.config
    sources = Sources(app, config)
    forms: list[SettingsForm] = []
    with ui.column().classes("w-full max-w-4xl mx-auto gap-4"):
        ui.label(t("set.title")).classes("text-xl font-semibold")
        _env_banner(t, sources)
        with ui.card().classes("w-full"):
            ui.label(t("set.keys")).classes("text-base font-semibold")
            if not app.keyring_available():
                with ui.column().classes("w-full gap-1 bg-amber-50 p-2 rounded").mark("no-keyring"):
                    ui.label(t("set.no_keyring")).classes("text-sm")
                    details_toggle(t, t("set.no_keyring_details", **ENV_NAMES))
            KeyField(app, t, "deepseek")
            KeyField(app, t, "embedding")
        for title, fields in GROUPS:
            with ui.card().classes("w-full"):
                ui.label(t(title)).classes("text-base font-semibold")
                with ui.row().classes("gap-x-4 gap-y-6"):
                    forms.append(SettingsForm(t, sources, fields))
        refresh_spending = spending_card(app, t)
        error = ui.column().classes("w-full gap-1").mark("settings-error")

        async def save() -> None:
            changes: dict[str, dict[str, Any]] = {}
            for form in forms:
                for section, values in form.changes().items():
                    for key, value in values.items():
                        if isinstance(value, dict):
                            changes.setdefault(section, {}).setdefault(key, {}).update(value)
                        else:
                            changes.setdefault(section, {})[key] = value
            language_before = app.config.ui.language
            error.clear()
            try:
                await app.save_settings(changes)
            except Exception as exc:  # said next to the button, the setting's name in details
                named = [n for form in forms if (n := form.flag(t, str(exc))) is not None]
                with error:
                    if named:  # the field is marked: say which, the allowed values in details
                        ui.label(t("set.field_invalid", label=named[0])).classes(
                            "text-sm text-red-800"
                        ).mark("error-message")
                        details_toggle(t, str(exc))
                    else:
                        error_panel(t, exc, retry=save, here="/settings")
                return
            for form in forms:
                form.flag(t, "")
            refresh_spending()  # the caps may have changed
            saved = Sources(app, app.file_settings())
            for form in forms:
                form.show_sources(saved)
            ui.notify(t("set.saved"), type="positive")
            if app.config.ui.language != language_before:
                ui.navigate.reload()

        ui.button(t("set.save"), icon="save", on_click=save).mark("settings-save")
        BundlesCard(app, t)
        settings_maintenance.build(app, t)
