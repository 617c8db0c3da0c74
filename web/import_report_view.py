"""A document's import report on the Library page: the warning sentence beside the document,
and the whole report (pages, pages with text, OCR and its confidence, characters, language,
parse time, each warning with its pages) inside the document's entry.

Words only from the i18n table (web/i18n_report.py); the engine's English messages and the OCR
engine's name stay behind the "details" toggle. Nothing here changes data.
"""

from __future__ import annotations

from nicegui import ui

from actors import ImportReport, ImportWarning
from web.error_view import details_toggle
from web.i18n import TEXTS, Texts

# Shown pages: the first ones, then "…", as the engine's messages do.
MAX_PAGES_SHOWN = 12
# The warning that asks for the "Recognise all pages" action.
PAGE_LIMIT = "ocr_page_limit"


def pages_text(t: Texts, pages: tuple[int, ...]) -> str:
    """The pages in words, "page 4" or "pages 3, 5 …", in the UI language; "" for none."""
    if not pages:
        return ""
    shown = ", ".join(str(p) for p in pages[:MAX_PAGES_SHOWN])
    if len(pages) > MAX_PAGES_SHOWN:
        shown += " …"
    return t("report.page_one" if len(pages) == 1 else "report.page_many", pages=shown)


def warning_sentence(t: Texts, w: ImportWarning) -> str:
    """What the warning means for a person, in the UI language."""
    key = f"report.w.{w.code}"
    if key not in TEXTS:
        return t("report.w.unknown")
    return t(key, n=w.count or len(w.pages), pages=pages_text(t, w.pages))


def caption(t: Texts, report: ImportReport | None) -> str | None:
    """The short sentence shown beside the document: its first warning (and how many more),
    or None when there is nothing to tell."""
    if report is None or not report.warnings:
        return None
    # the warning a button beside the document answers comes first
    ordered = sorted(report.warnings, key=lambda w: w.code != PAGE_LIMIT)
    first = warning_sentence(t, ordered[0])
    more = len(report.warnings) - 1
    return t("report.caption_more", first=first, n=more) if more else first


def asks_for_all_pages(report: ImportReport | None) -> bool:
    """The page limit left scanned pages out: "Recognise all pages" helps."""
    return report is not None and any(w.code == PAGE_LIMIT for w in report.warnings)


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def report_view(t: Texts, report: ImportReport | None) -> None:
    """The whole report, one fact a line, then each warning with its pages."""
    with ui.column().classes("w-full gap-0 py-1").mark("import-report"):
        ui.label(t("report.title")).classes("text-sm font-semibold")
        if report is None:
            ui.label(t("report.none")).classes("text-xs text-slate-500").mark("report-none")
            return
        facts: list[str] = []
        if report.pages is not None:
            facts.append(t("report.pages", pages=report.pages, with_text=report.pages_with_text))
        if report.pages_ocr:
            confidence = "—" if report.ocr_confidence is None else f"{report.ocr_confidence:.0%}"
            facts.append(t("report.ocr", n=report.pages_ocr, confidence=confidence))
        if report.low_confidence_pages:
            low = pages_text(t, report.low_confidence_pages)
            facts.append(t("report.low_confidence", pages=low))
        facts.append(t("report.chars", chars=f"{report.chars:,}", cjk=f"{report.cjk_share:.0%}"))
        if report.lang in ("en", "zh"):
            facts.append(t("report.lang", lang=t(f"report.lang.{report.lang}")))
        if report.parse_seconds is not None:
            facts.append(t("report.time", seconds=_seconds(report.parse_seconds)))
        for fact in facts:
            ui.label(fact).classes("text-xs text-slate-600").mark("report-fact")
        if not report.warnings:
            ui.label(t("report.no_warnings")).classes("text-xs text-slate-500")
        for w in report.warnings:
            with ui.row().classes("items-start no-wrap gap-1").mark("report-warning"):
                ui.icon("warning", size="xs").classes("text-amber-600 mt-0.5")
                ui.label(warning_sentence(t, w)).classes("text-xs text-amber-900")
        details = [f"{w.code}: {w.message}" for w in report.warnings]
        if report.ocr_engine:
            details.append(f"OCR: {report.ocr_engine}")
        if details:
            details_toggle(t, "\n".join(details))
