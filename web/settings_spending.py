"""Spending on the settings page: what chat requests cost today and this month, beside the caps.

Figures only; the caps are edited with the other chat settings, and new requests are refused
by the app (not by this page) once a cap is reached.
"""

from __future__ import annotations

from collections.abc import Callable

from nicegui import ui

from actors import App, SpendingTotals
from web.i18n import Texts
from web.shell import show_error


def spending_card(app: App, t: Texts) -> Callable[[], None]:
    """The card; the function returned fills it again (after the caps were saved)."""
    box = ui.column().classes("w-full")

    def fill() -> None:
        box.clear()
        with box:
            _card(app, t)

    fill()
    return fill


def _card(app: App, t: Texts) -> None:
    try:
        totals = app.spending()
    except Exception as exc:  # an unreadable ledger must not take the settings page down
        show_error(t, exc)
        return
    with ui.card().classes("w-full").mark("spending"):
        ui.label(t("spend.title")).classes("text-base font-semibold")
        _row(t, "spend.today", totals.day, totals.spent_today, totals.daily_cap, totals, "today")
        _row(
            t,
            "spend.month",
            totals.month,
            totals.spent_this_month,
            totals.monthly_cap,
            totals,
            "month",
        )
        if totals.other_currencies:
            ui.label(
                t("spend.other_currencies", currencies=", ".join(totals.other_currencies))
            ).classes("text-xs text-slate-500")
        ui.label(t("spend.note")).classes("text-xs text-slate-500").mark("spend-note")


def _row(
    t: Texts, key: str, when: str, spent: float, cap: float, totals: SpendingTotals, mark: str
) -> None:
    amount = f"{spent:.4f} {totals.currency}"
    if cap > 0:
        text = t(f"{key}_capped", when=when, spent=amount, cap=f"{cap:g} {totals.currency}")
    else:
        text = t(key, when=when, spent=amount)
    reached = cap > 0 and spent >= cap
    with ui.column().classes("w-full gap-1"):
        ui.label(text).classes("text-sm" + (" text-red-700 font-medium" if reached else "")).mark(
            f"spending-{mark}"
        )
        if cap > 0:
            ui.linear_progress(value=min(spent / cap, 1.0), show_value=False).props(
                "color=negative" if reached else ""
            ).classes("w-96")
        if reached:
            ui.label(t(f"spend.reached_{mark}")).classes("text-xs text-red-700").mark(
                f"spending-{mark}-reached"
            )
