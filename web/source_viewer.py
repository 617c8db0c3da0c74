"""The source viewer: a dialog showing a cited block highlighted among its neighbours in the
document, and for PDFs the whole page drawn from the original file with the block's printed
lines marked: zoomable, page by page, with the printed page label, and a link to the original.

Document text is untrusted: it is shown as plain text (labels), never as HTML. The original
file is served only as the PDF a snapshot's block came from, never by a path the page sends.
"""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path
from urllib.parse import urlencode

from fastapi.responses import FileResponse, PlainTextResponse, Response
from nicegui import app as nicegui_app
from nicegui import events, ui

from actors import App, Citation, PageImage, SourceView
from web.i18n import Texts
from web.shell import show_error, texts

OUTBOX_HEADSTART_S = 0.03
ORIGINAL_ROUTE = "/source/original"

_FRAGMENT_CHARS = 48
ZOOM_STEPS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)  # 1.0 = the whole page fits the viewport
_VIEWPORT_VH = 70  # height of the page viewport, in % of the window's height


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


def pages_text(t: Texts, start: int | str | None, end: int | str | None) -> str:
    if start is None:
        return ""
    if end is None or end == start:
        return t("ask.page", page=start)
    return t("ask.pages", start=start, end=end)


def printed_pages_text(t: Texts, view: SourceView, start: int | None, end: int | None) -> str:
    """As pages_text, with the labels the PDF prints on those pages where it has them (the
    citation chips name the same pages)."""
    if start is None:
        return ""
    last = end if end is not None else start
    return pages_text(t, view.page_label(start) or start, view.page_label(last) or last)


def page_text(t: Texts, view: SourceView, page: int) -> str:
    """ "page 40 (PDF page 52)" when the PDF prints its own page labels, else "PDF page 52"."""
    label = view.page_label(page)
    return (
        t("source.page_label", label=label, page=page) if label else t("source.pdf_page", page=page)
    )


def original_url(view: SourceView, snapshot_id: str | None, page: int) -> str:
    """Where the browser opens the original PDF at `page` (its built-in viewer reads #page)."""
    query = {"doc": view.doc_id, "block": view.block_id}
    if snapshot_id:
        query["snapshot"] = snapshot_id
    return f"{ORIGINAL_ROUTE}?{urlencode(query)}#page={page}"


def register_routes(app: App) -> None:
    """The route that serves an original PDF; behind the loopback guard like every route."""

    @nicegui_app.get(ORIGINAL_ROUTE, include_in_schema=False)
    async def original(doc: str, block: str, snapshot: str | None = None) -> Response:
        view = await app.source_view(doc, block, snapshot_id=snapshot)
        if not view.found or view.format != "pdf" or view.pdf_path is None:
            t = texts(app)
            return PlainTextResponse(t("source.original_gone", message=view.message), 404)
        return FileResponse(
            view.pdf_path,
            media_type="application/pdf",
            filename=Path(view.source).name,
            content_disposition_type="inline",
        )


async def open_source(app: App, t: Texts, citation: Citation, snapshot_id: str | None) -> None:
    """Open the dialog for one citation chip."""
    try:
        view = await app.source_view(citation.doc_id, citation.block_id, snapshot_id=snapshot_id)
    except Exception as exc:  # shown to the person; the page stays usable
        show_error(t, exc)
        return
    pdf = view.found and view.format == "pdf" and view.page is not None
    width = "w-[84rem]" if pdf and view.pdf_path else "w-[56rem]"
    with ui.dialog().props("maximized=false") as dialog, ui.card().classes(f"{width} max-w-full"):
        dialog.mark("source-viewer")
        with ui.row().classes("w-full items-center"):
            ui.label(t("source.title")).classes("text-lg font-semibold")
            ui.space()
            ui.button(t("source.close"), on_click=dialog.close).props("flat")
        # Open at once: the cited text shows now; a PDF page (~0.1 s to draw) follows.
        dialog.open()
        cited_id = await _fill(app, t, view, snapshot_id)
    if cited_id is not None:  # bring the cited block into view inside its scroll area:
        # centred among its neighbours, or its start when it is taller than the area
        ui.run_javascript(
            f"setTimeout(() => {{ const e = getHtmlElement({cited_id}); if (!e) return; "
            "const area = e.closest('.q-scrollarea'); "
            "const tall = area && e.offsetHeight > 0.8 * area.clientHeight; "
            "e.scrollIntoView({block: tall ? 'start' : 'center'}); }, 100)"
        )


async def _fill(app: App, t: Texts, view: SourceView, snapshot_id: str | None) -> int | None:
    """Fill the dialog; the element id of the cited block (None when not shown)."""
    if not view.found:
        ui.label(t("source.not_found", message=view.message)).classes("text-red-700").mark(
            "source-missing"
        )
        return None
    ui.label(view.title or view.source_label).classes("text-base font-medium").mark("source-title")
    if view.section_path:
        ui.label(t("source.section", section=view.section_path)).classes("text-sm opacity-80")
    if view.format != "pdf" or view.page is None:
        return _context(t, view, "h-[70vh]")
    if view.pdf_path is None:
        cited_id = _context(t, view, "h-72")
        ui.label(_why_no_page(t, view)).classes("text-sm bg-amber-50 p-2 rounded").mark(
            "no-page-image"
        )
        return cited_id
    with ui.row().classes("w-full no-wrap items-start gap-3 max-lg:flex-wrap"):
        with ui.column().classes("grow min-w-[24rem] gap-1"):
            pane = _PdfPane(app, t, view, snapshot_id)
        with ui.column().classes("w-[24rem] max-lg:w-full gap-1"):
            ui.label(t("source.context")).classes("text-sm font-medium")
            cited_id = _context(t, view, f"h-[{_VIEWPORT_VH}vh]")
    # MuPDF draws without releasing the GIL, which would hold the dialog above in the outbox
    # until the page is drawn: give the outbox a moment to send it first.
    await asyncio.sleep(OUTBOX_HEADSTART_S)
    await pane.show(view.page)
    return cited_id


def _context(t: Texts, view: SourceView, height: str) -> int | None:
    """The cited block among its neighbours, each section's path where a new one starts."""
    cited_id: int | None = None
    section = view.section_path if view.blocks and view.blocks[0].section else ""
    with ui.scroll_area().classes(f"w-full {height} border rounded").mark("source-context"):
        for block in view.blocks:
            if block.section and block.section != section:
                section = block.section
                ui.label(section).classes("text-xs font-semibold opacity-60 mt-2").mark(
                    "context-section"
                )
            pages = printed_pages_text(t, view, block.page_start, block.page_end)
            with ui.column().classes(
                "w-full p-2 my-1 rounded gap-1 "
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
                if block.ocr_confidence is not None:
                    ui.label(t("source.ocr", confidence=round(block.ocr_confidence * 100))).classes(
                        "text-xs italic opacity-80"
                    ).mark("block-ocr")
                ui.label(block.text).classes("whitespace-pre-wrap text-sm")
    return cited_id


class _PdfPane:
    """One PDF page at a time, whole (zoom 1 fits it in the viewport), the block marked."""

    def __init__(self, app: App, t: Texts, view: SourceView, snapshot_id: str | None) -> None:
        self.app, self.t, self.view, self.snapshot_id = app, t, view, snapshot_id
        self.page = view.page or 1
        self.zoom = 0  # index into ZOOM_STEPS
        self.image: PageImage | None = None
        cited = next((b for b in view.blocks if b.cited), None)
        self.fragments = highlight_fragments(cited.text) if cited else []
        self.first = view.page or 1
        self.last = (cited.page_end if cited else None) or self.first
        with ui.row().classes("w-full items-center gap-1"):
            self.prev = self._button("chevron_left", "source.prev_page", -1).mark("prev-page")
            self.label = ui.label().classes("text-sm font-medium").mark("page-label")
            self.next = self._button("chevron_right", "source.next_page", 1).mark("next-page")
            if view.pages:
                ui.label(t("source.page_count", pages=view.pages)).classes("text-xs opacity-60")
            ui.space()
            self._zoom_button("zoom_out", "source.zoom_out", -1).mark("zoom-out")
            self._zoom_button("fit_screen", "source.zoom_fit", 0).mark("zoom-fit")
            self._zoom_button("zoom_in", "source.zoom_in", 1).mark("zoom-in")
            self.original = (
                ui.link(t("source.open_original"), "#", new_tab=True)
                .classes("text-sm ml-2")
                .mark("open-original")
            )
        self.viewport = (
            ui.element("div")
            .classes("w-full border rounded bg-gray-100 overflow-auto")
            .style(f"height: {_VIEWPORT_VH}vh")
            .mark("page-viewport")
        )
        self.viewport.on(
            "wheel",
            self._wheel,
            throttle=0.15,
            # only ctrl+wheel, and then not the browser's own zoom of the whole window
            js_handler="(e) => { if (!e.ctrlKey) return; e.preventDefault(); emit(e.deltaY); }",
        )
        with self.viewport:
            self.img = ui.element("img").style("display: block; margin: 0 auto")
        self.img.mark("pdf-page")
        self.img.visible = False
        self.note = ui.label().classes("text-sm opacity-80").mark("page-note")
        self.note.visible = False

    def _button(self, icon: str, key: str, step: int) -> ui.button:
        async def go() -> None:
            await self.show(self.page + step)

        return ui.button(icon=icon, on_click=go).props("flat dense round").tooltip(self.t(key))

    def _zoom_button(self, icon: str, key: str, step: int) -> ui.button:
        def go() -> None:
            self.set_zoom(self.zoom + step if step else 0)

        hint = f"{self.t(key)} — {self.t('source.zoom_hint')}"
        return ui.button(icon=icon, on_click=go).props("flat dense round").tooltip(hint)

    def _wheel(self, event: events.GenericEventArguments) -> None:
        delta = float(event.args) if isinstance(event.args, int | float) else 0.0
        if delta:
            self.set_zoom(self.zoom + (1 if delta < 0 else -1))

    async def show(self, page: int) -> None:
        """Draw `page` (1-based) with the cited block marked where it is on it."""
        pages = self.view.pages or self.page
        if not 1 <= page <= pages or self.view.pdf_path is None:
            return
        self.page = page
        self.label.text = page_text(self.t, self.view, page)
        self.prev.enabled, self.next.enabled = page > 1, page < pages
        self.original.props(f'href="{original_url(self.view, self.snapshot_id, page)}"')
        on_block = self.first <= page <= self.last
        try:
            image = await self.app.render_pdf_page(
                self.view.pdf_path,
                page,
                self.fragments if on_block else (),
                self.view.rects if on_block else (),
            )
        except Exception as exc:  # a page that cannot be drawn still leaves the text
            self._say(self.t("source.no_page_image", message=str(exc)))
            self.img.visible = False
            return
        self.image = image
        data = base64.b64encode(image.png).decode("ascii")
        self.img.props(f'src="data:image/png;base64,{data}"')
        self.img.visible = True
        if not on_block:
            self._say(self.t("source.not_on_page", pages=self._block_pages()))
        elif image.marked_by == "text":
            self._say(self.t("source.marked_by_text"))
        elif image.marked_by == "none":
            self._say(self.t("source.not_marked"))
        else:
            self.note.visible = False
        self.set_zoom(self.zoom)

    def _block_pages(self) -> str:
        first, last = self.first, self.last
        if first == last:
            return page_text(self.t, self.view, first)
        return f"{page_text(self.t, self.view, first)} – {page_text(self.t, self.view, last)}"

    def _say(self, text: str) -> None:
        self.note.text = text
        self.note.visible = True

    def set_zoom(self, step: int) -> None:
        """Zoom to ZOOM_STEPS[step]; the page keeps its shape (never cropped) and, zoomed in,
        the viewport scrolls to the block's mark."""
        self.zoom = max(0, min(len(ZOOM_STEPS) - 1, step))
        image = self.image
        if image is None:
            return
        ratio = image.width / image.height if image.height else 0.7
        factor = ZOOM_STEPS[self.zoom]
        # The fitted width: the viewport's width, or less when the page is taller than wide.
        fitted = f"min(100%, {(_VIEWPORT_VH - 1) * ratio:.2f}vh)"
        self.img.style(f"width: calc({fitted} * {factor}); max-width: none; height: auto")
        self.img.mark("pdf-page")
        if image.marks and factor > 1:
            x0 = min(m[0] for m in image.marks) / image.width
            y0 = min(m[1] for m in image.marks) / image.height
            ui.run_javascript(
                f"setTimeout(() => {{ const v = getHtmlElement({self.viewport.id}), "
                f"i = getHtmlElement({self.img.id}); if (!v || !i) return; "
                f"v.scrollTop = {y0:.4f} * i.clientHeight - 40; "
                f"v.scrollLeft = {x0:.4f} * i.clientWidth - 40; }}, 50)"
            )


def _why_no_page(t: Texts, view: SourceView) -> str:
    """Why the PDF page cannot be drawn, in the person's language (the text above stands in)."""
    if view.pdf_problem is None:
        return t("source.no_page_image", message=view.message)
    return t(f"source.pdf_{view.pdf_problem}", path=view.pdf_origin)
