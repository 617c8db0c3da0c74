"""Scanned PDFs made for the OCR tests: real text pages of the shared corpus rendered to images
and put back into PDFs that have no text layer, with the text each image was rendered from."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf

from tests.corpus import DOCS

_mupdf: Any = pymupdf

ZH_PDF = DOCS / "lshort-zh-cn.pdf"
EN_PDF = DOCS / "debian-reference.en.pdf"
# A few lines of body text each: enough to check recognition, little enough to OCR quickly.
ZH_CLIP = (13, 70, 70, 190)  # (page, x-margin, top, height) in points
EN_CLIP = (30, 0, 60, 200)


def clip_of(source: Any, spec: tuple[int, int, int, int]) -> tuple[Any, Any]:
    page_no, margin, top, height = spec
    page = source[page_no]
    rect = _mupdf.Rect(margin, top, page.rect.width - margin, top + height)
    return page, rect


def source_text(path: Path, spec: tuple[int, int, int, int]) -> str:
    with _mupdf.open(str(path)) as source:
        page, rect = clip_of(source, spec)
        return str(page.get_text(clip=rect))


def add_scan(
    out: Any, path: Path, spec: tuple[int, int, int, int], *, dpi: int = 150, turn: int = 0
) -> None:
    """A page of `out` holding only an image of the clip `spec` of `path` (grey, `dpi`),
    the image turned `turn` degrees clockwise as a page scanned on its side."""
    with _mupdf.open(str(path)) as source:
        page, rect = clip_of(source, spec)
        pix = page.get_pixmap(dpi=dpi, clip=rect, colorspace=_mupdf.csGRAY)
    width, height = (rect.height, rect.width) if turn in (90, 270) else (rect.width, rect.height)
    target = out.new_page(width=width, height=height)
    target.insert_image(target.rect, stream=pix.tobytes("png"), rotate=turn)


def add_blank(out: Any) -> None:
    target = out.new_page(width=400, height=300)
    pix = _mupdf.Pixmap(_mupdf.csGRAY, _mupdf.IRect(0, 0, 400, 300), False)
    pix.set_rect(pix.irect, (255,))
    target.insert_image(target.rect, pixmap=pix)


def add_two_columns(out: Any, left: str, right: str, *, dpi: int = 150) -> None:
    """An image-only page of two columns of English text (its text layer rendered, then
    dropped)."""
    scratch = _mupdf.open()
    page = scratch.new_page(width=500, height=260)
    page.insert_textbox(_mupdf.Rect(30, 30, 235, 250), left, fontsize=10, fontname="helv")
    page.insert_textbox(_mupdf.Rect(265, 30, 470, 250), right, fontsize=10, fontname="helv")
    pix = page.get_pixmap(dpi=dpi, colorspace=_mupdf.csGRAY)
    scratch.close()
    target = out.new_page(width=500, height=260)
    target.insert_image(target.rect, stream=pix.tobytes("png"))


def save(out: Any, path: Path) -> Path:
    out.save(str(path))
    out.close()
    return path


def char_recall(reference: str, recognised: str) -> float:
    """Share of the reference's non-space characters that OCR gave back (as a multiset)."""
    want = Counter("".join(reference.split()))
    got = Counter("".join(recognised.split()))
    return sum(min(n, got[ch]) for ch, n in want.items()) / max(1, sum(want.values()))
