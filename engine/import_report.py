"""The import report of one document: what parsing read (pages, characters, language, OCR)
and what a person should know (warnings), summed up from the parsed document.

Pure and cheap (one pass over the text); it runs where the record is made, in the parse
worker, and never reads the file again.
"""

from __future__ import annotations

import re

from engine.parsing import ParsedDocument, ocr_engine_version
from engine.parsing.ocr import LOW_CONFIDENCE
from index.records import ImportReport, ImportWarning

# All but the characters engine.parsing.lines.is_cjk names (scripts written without spaces),
# the ideographic space aside (whitespace, which the share leaves out): what deleting its runs
# leaves is the CJK characters, counted in C with no list of matches (which matters for a
# book of millions of characters). None of them is ASCII.
_NOT_CJK = re.compile(
    "[^\u4e00-\u9fff\u3400-\u4dbf\u3001-\u30ff\uff00-\uffef\uf900-\ufaff"
    "\U00020000-\U0002fa1f\u31c0-\u31ff\ufe30-\ufe4f]+"
)


def import_report(parsed: ParsedDocument, parse_seconds: float | None = None) -> ImportReport:
    """The report of `parsed`, read in `parse_seconds` (None when not measured)."""
    pages_with_text: set[int] = set()
    texts: list[str] = []
    for section in parsed.sections:
        title = section.title.strip()
        if title and section.page is not None:
            pages_with_text.add(section.page)
        for paragraph in section.paragraphs:
            text = paragraph.text
            if not text or text.isspace():
                continue
            texts.append(text)
            if paragraph.page is not None:
                pages_with_text.add(paragraph.page)
    # Counted on the text joined once: each count adds up over paragraphs, and a string
    # method's pass in C costs less than a call per paragraph.
    whole = "".join(texts)
    chars = len(whole)
    cjk = 0 if whole.isascii() else len(_NOT_CJK.sub("", whole))
    spaces = chars - len("".join(whole.split()))  # str.split's whitespace is re's \s
    visible = chars - spaces
    paged = parsed.pages is not None
    return ImportReport(
        pages=parsed.pages,
        pages_with_text=len(pages_with_text) if paged else None,
        pages_ocr=parsed.pages_ocr,
        ocr_confidence=parsed.ocr_confidence,
        low_confidence_pages=tuple(p for p, c in parsed.ocr_pages if c < LOW_CONFIDENCE),
        ocr_page_confidence=tuple((p, round(c, 3)) for p, c in parsed.ocr_pages),
        ocr_engine=ocr_engine_version() if parsed.pages_ocr else "",
        chars=chars,
        cjk_share=round(cjk / visible, 3) if visible > 0 else 0.0,
        lang=parsed.lang,
        warnings=tuple(
            ImportWarning(code=w.code, message=w.message, pages=w.pages, count=w.count)
            for w in parsed.warnings
        ),
        parse_seconds=None if parse_seconds is None else round(parse_seconds, 3),
    )
