"""The source viewer: a dialog showing a cited block highlighted among its section's
neighbours, and for PDFs the page rendered from the original file with the block marked.

Document text is untrusted: it is shown as plain text (labels), never as HTML.
"""

from __future__ import annotations

import asyncio
import base64
import re

from nicegui import ui

from actors import App, Citation, SourceView
from web.i18n import Texts
from web.shell import show_error

OUTBOX_HEADSTART_S = 0.03

_FRAGMENT_CHARS = 48


def highlight_fragments(text: str, limit: int = 6) -> list[str]:
    """Short pieces of a block's text to find on its PDF page (search across a whole block
    fails on hyphenation and line breaks; short pieces still mark where it is)."""
    flat = " ".join(text.split())
    pieces = [p.strip() for p in re.split(r"(?<=[.!?。！？;；:：])\s*", flat) if p.strip()]
    out: list[str] = []
    for piece in pieces:
        if len(piece) < 8:
            continue
        out.append(piece[:_FRAGMENT_CHARS].rstrip())
        if len(out) >= limit:
            break
    return out or ([flat[:_FRAGMENT_CHARS]] if flat else [])


def pages_text(t: Texts, start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    if end is None or end == start:
        return t("ask.page", page=start)
    return t("ask.pages", start=start, end=end)


async def open_source(app: App, t: Texts, citation: Citation, snapshot_id: str | None) -> None:
    """Open the dialog for one citation chip."""
    try:
        view = await app.source_view(citation.doc_id, citation.block_id, snapshot_id=snapshot_id)
    except Exception as exc:  # shown to the person; the page stays usable
        show_error(t, exc)
        return
    with ui.dialog().props("maximized=false") as dialog, ui.card().classes("w-[56rem] max-w-full"):
        dialog.mark("source-viewer")
        with ui.row().classes("w-full items-center"):
            ui.label(t("source.title")).classes("text-lg font-semibold")
            ui.space()
            ui.button(t("source.close"), on_click=dialog.close).props("flat")
        # Open at once: the cited text shows now; a PDF page (~0.1–0.3 s to draw) follows.
        dialog.open()
        cited_id = await _fill(app, t, view)
    if cited_id is not None:  # bring the cited block into view inside its scroll area
        ui.run_javascript(
            f"setTimeout(() => getHtmlElement({cited_id})"
            "?.scrollIntoView({block: 'center'}), 100)"
        )


async def _fill(app: App, t: Texts, view: SourceView) -> int | None:
    """Fill the dialog; the element id of the cited block (None when not shown)."""
    if not view.found:
        ui.label(t("source.not_found", message=view.message)).classes("text-red-700").mark(
            "source-missing"
        )
        return None
    cited_id: int | None = None
    ui.label(view.title or view.source_label).classes("text-base font-medium").mark("source-title")
    if view.section_path:
        ui.label(t("source.section", section=view.section_path)).classes("text-sm opacity-80")
    with ui.scroll_area().classes("w-full h-72 border rounded"):
        for block in view.blocks:
            pages = pages_text(t, block.page_start, block.page_end)
            with ui.column().classes(
                "w-full p-2 my-1 rounded "
                + ("bg-yellow-100 border-l-4 border-yellow-500" if block.cited else "opacity-70")
            ) as box:
                if block.cited:
                    box.mark("cited-block")
                    cited_id = box.id
                    ui.label(t("source.cited") + (f" · {pages}" if pages else "")).classes(
                        "text-xs font-semibold text-yellow-800"
                    )
                elif pages:
                    ui.label(pages).classes("text-xs")
                ui.label(block.text).classes("whitespace-pre-wrap text-sm")
    if view.format != "pdf" or view.page is None:
        return cited_id
    if view.pdf_path is None:
        ui.label(_why_no_page(t, view)).classes("text-sm bg-amber-50 p-2 rounded").mark(
            "no-page-image"
        )
        return cited_id
    cited = next((b for b in view.blocks if b.cited), None)
    fragments = highlight_fragments(cited.text) if cited else []
    # MuPDF draws without releasing the GIL, which would hold the dialog above in the outbox
    # until the page is drawn: give the outbox a moment to send it first.
    await asyncio.sleep(OUTBOX_HEADSTART_S)
    try:
        png = await app.render_pdf_page(view.pdf_path, view.page, fragments)
    except Exception as exc:  # a page that cannot be drawn still leaves the text
        ui.label(t("source.no_page_image", message=str(exc))).classes("text-sm")
        return cited_id
    ui.label(t("source.page_image", page=view.page)).classes("text-sm mt-2")
    data = base64.b64encode(png).decode("ascii")
    ui.image(f"data:image/png;base64,{data}").classes("w-full border").mark("pdf-page")
    return cited_id


def _why_no_page(t: Texts, view: SourceView) -> str:
    """Why the PDF page cannot be drawn, in the person's language (the text above stands in)."""
    if view.pdf_problem is None:
        return t("source.no_page_image", message=view.message)
    return t(f"source.pdf_{view.pdf_problem}", path=view.pdf_origin)
