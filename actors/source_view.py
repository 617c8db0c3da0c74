"""The source viewer's data: a cited block among its neighbours in the document, read from the
snapshot the answer used, and for PDFs any page drawn from the original file with the block's
printed lines marked (found by their text for snapshots built before lines were kept) — only
when that file is still where it was imported from and unchanged (same hash).

Read-only: it never writes a document, a snapshot or the original file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import msgspec

from actors.app import App
from actors.errors import AppError
from actors.origins import Origins
from index.fsutil import file_sha256
from index.records import PageRect
from index.snapshot import Snapshot

SOURCE_RADIUS = 4  # neighbouring blocks of the document shown on each side of a cited block
# Pixels per point of a drawn page: an A4 page is 1191 × 1684 px, sharp in the viewer up to
# about twice its fitted size (a text page takes ~0.1 s to draw and encode at this scale).
PDF_ZOOM = 2.0
_TEXT_MARKS_MAX = 20  # marks found by text search per fragment (a common phrase repeats)
_MARK_FILL = (1.0, 0.85, 0.0)


class SourceBlock(msgspec.Struct, frozen=True, kw_only=True):
    block_id: str
    text: str
    cited: bool
    page_start: int | None = None
    page_end: int | None = None
    section: str = ""  # the path of the block's section
    # Read from a scanned page by OCR: the lowest confidence of its recognised pages (0..1);
    # None for text that came from the file itself.
    ocr_confidence: float | None = None


PdfProblem = Literal["unknown", "moved", "changed"]


class SourceView(msgspec.Struct, frozen=True, kw_only=True):
    """A cited block in its context: the neighbouring blocks of its section."""

    found: bool
    message: str = ""  # why nothing (or no page image) can be shown
    title: str = ""
    source_label: str = ""
    section_path: str = ""
    format: str = ""
    source: str = ""
    blocks: tuple[SourceBlock, ...] = ()
    page: int | None = None
    pdf_path: str | None = None  # the original PDF, found and unchanged since the import
    pdf_problem: PdfProblem | None = None  # why there is no pdf_path for a PDF
    pdf_origin: str = ""  # where the file was imported from, when that is known
    doc_id: str = ""
    block_id: str = ""  # the cited block
    pages: int | None = None  # the PDF's page count
    page_labels: tuple[str, ...] = ()  # printed label of each page; () when it has none
    rects: tuple[PageRect, ...] = ()  # where the cited block is printed; () when not kept

    def page_label(self, page: int) -> str:
        """The printed label of a 1-based page, "" when there is none or it is the number."""
        if not 1 <= page <= len(self.page_labels):
            return ""
        label = self.page_labels[page - 1]
        return "" if label == str(page) else label


MarkSource = Literal["rects", "text", "none"]


class PageImage(msgspec.Struct, frozen=True, kw_only=True):
    """A drawn PDF page: the PNG, the page's size in points and the marks drawn on it."""

    png: bytes
    width: float  # points
    height: float
    marks: tuple[tuple[float, float, float, float], ...] = ()  # x0, y0, x1, y1 in points
    marked_by: MarkSource = "none"  # the stored rects, a search for the block's text, or none


class SourceReader:
    """Source views of one app; remembers the hashes of original files it has checked."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._file_hashes: dict[tuple[str, int, int], str] = {}

    async def view(
        self,
        doc_id: str,
        block_id: str,
        *,
        snapshot_id: str | None = None,
        collection: str | None = None,
    ) -> SourceView:
        """The cited block among its neighbours in the document, read from the snapshot the
        answer used (or the active one); says plainly when that snapshot is gone."""
        name = self.app.resolve_collection(collection)
        # One hop off the event loop for the whole lookup: opening the snapshot, reading the
        # context and checking the original file each cost a GIL hand-off when imports keep
        # worker threads busy, which a citation click would feel.
        return await anyio.to_thread.run_sync(self._view, name, doc_id, block_id, snapshot_id)

    def _view(self, name: str, doc_id: str, block_id: str, snapshot_id: str | None) -> SourceView:
        catalog = self.app.catalog(name)
        if snapshot_id is not None and catalog.manifest(snapshot_id) is None:
            return SourceView(
                found=False,
                message=f"the snapshot this answer used ({snapshot_id}) has been cleaned up, "
                "so its sources can no longer be shown; ask again to cite the current one",
            )
        sid = snapshot_id or catalog.active_id()
        if sid is None:
            return SourceView(found=False, message="this collection has no documents yet")
        with catalog.pinned(sid) as snap:
            view, content_hash = _context(snap, doc_id, block_id)
        if view.found and view.format == "pdf" and view.page is not None:
            view = self._with_pdf(name, view, content_hash)
        return view

    def _with_pdf(self, collection: str, view: SourceView, content_hash: str) -> SourceView:
        """Attach the original PDF when it is still where it was imported from, unchanged."""
        origin = Origins(self.app.data, collection).get(view.source)
        problem: PdfProblem
        if origin is None:
            problem, why = "unknown", "the original file's location was never recorded"
        elif not Path(origin).is_file():
            problem, why = "moved", f"the original file is no longer at {origin}"
        elif self._hash_of(Path(origin)) != content_hash:
            problem, why = "changed", f"the file at {origin} has changed since it was imported"
        else:
            return msgspec.structs.replace(view, pdf_path=origin)
        return msgspec.structs.replace(
            view,
            pdf_problem=problem,
            pdf_origin=origin or "",
            message=f"{why}; the page image cannot be shown",
        )

    def _hash_of(self, path: Path) -> str:
        """The file's sha256, remembered while its size and modification time stay the same
        (a click on a citation should not re-read a large PDF every time)."""
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._file_hashes:
            self._file_hashes[key] = file_sha256(path)
        return self._file_hashes[key]

    async def render_pdf_page(
        self,
        path: str,
        page: int,
        highlight: Sequence[str] = (),
        rects: Sequence[PageRect] = (),
    ) -> PageImage:
        """A 1-based page of the PDF with the block marked: its `rects` on this page, or
        where the text of `highlight` is found when no rect is on it."""
        here = tuple((x0, y0, x1, y1) for p, x0, y0, x1, y1 in rects if p == page)
        return await anyio.to_thread.run_sync(_render_page, path, page, tuple(highlight), here)


def _context(snap: Snapshot, doc_id: str, block_id: str) -> tuple[SourceView, str]:
    """The cited block and up to SOURCE_RADIUS neighbours on each side in its document."""
    ordinal = snap.block_ordinal(doc_id, block_id)
    if ordinal is None:
        return SourceView(
            found=False, message="this block is not in the knowledge base version the answer used"
        ), ""
    block = snap.block(ordinal)
    doc = snap.documents[block.doc]

    def path_of(section: int) -> str:
        return doc.sections[section].path if 0 <= section < len(doc.sections) else ""

    first, last = doc.block_start, doc.block_start + doc.block_count - 1
    lo, hi = max(first, ordinal - SOURCE_RADIUS), min(last, ordinal + SOURCE_RADIUS)
    blocks = []
    for i in range(lo, hi + 1):
        b = snap.block(i)
        blocks.append(
            SourceBlock(
                block_id=b.block_id,
                text=b.text,
                cited=i == ordinal,
                page_start=b.page_start,
                page_end=b.page_end,
                section=path_of(b.section),
                ocr_confidence=(
                    doc.report.ocr_confidence_of(b.page_start, b.page_end) if doc.report else None
                ),
            )
        )
    pdf = doc.format == "pdf"
    view = SourceView(
        found=True,
        title=doc.title,
        source=doc.source,
        source_label=doc.source_label,
        section_path=path_of(block.section),
        format=doc.format,
        blocks=tuple(blocks),
        page=block.page_start,
        doc_id=doc.doc_id,
        block_id=block.block_id,
        pages=doc.pages,
        page_labels=snap.page_labels(block.doc) if pdf else (),
        rects=snap.block_rects(ordinal) if pdf else (),
    )
    return view, doc.content_hash


def _render_page(
    path: str,
    page: int,
    highlight: tuple[str, ...],
    rects: tuple[tuple[float, float, float, float], ...],
) -> PageImage:
    import pymupdf

    mupdf: Any = pymupdf  # untyped library
    with mupdf.open(path) as pdf:  # opened read-only; nothing drawn here is ever saved
        if not 1 <= page <= pdf.page_count:
            raise AppError(f"page {page} is not in {path} (it has {pdf.page_count} pages)")
        p = pdf[page - 1]
        marked_by: MarkSource = "rects" if rects else "none"
        marks = [mupdf.Rect(r) for r in rects]
        if not marks:
            for text in highlight:
                marks.extend(q.rect for q in p.search_for(text, quads=True)[:_TEXT_MARKS_MAX])
            marked_by = "text" if marks else "none"
        # Translucent fills over the text (multiplied, so the glyphs stay black), drawn into
        # this in-memory copy of the page only.
        if marks:
            shape = p.new_shape()
            for r in marks:
                shape.draw_rect(mupdf.Rect(r.x0 - 1.5, r.y0 - 1, r.x1 + 1.5, r.y1 + 1))
            shape.finish(color=None, fill=_MARK_FILL, fill_opacity=0.45)
            shape.commit(overlay=True)
        pixmap = p.get_pixmap(matrix=mupdf.Matrix(PDF_ZOOM, PDF_ZOOM), annots=False)
        return PageImage(
            png=pixmap.tobytes("png"),
            width=float(p.rect.width),
            height=float(p.rect.height),
            marks=tuple((r.x0, r.y0, r.x1, r.y1) for r in marks),
            marked_by=marked_by,
        )
