"""The regression corpus of real-world files (tests/realworld/<format>/, sources in each
folder's README.md): each file lands or fails as expected, with the expected warnings, a
phrase of its text findable, and for web pages a phrase of their site chrome not stored."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from engine.parsing import ParseError, parse_file

CORPUS = Path(__file__).resolve().parents[1] / "realworld"
FORMATS = ("epub", "docx", "html", "text")
# Pictures in a book or document are not recognised: they land with a warning saying so.
IMAGES = ("images_not_read",)  # pdf/ has its own test, beside its files


class Case(NamedTuple):
    name: str  # <format>/<file>
    outcome: str = "landed"  # or the ParseError reason
    warnings: tuple[str, ...] = ()  # warning codes, in order
    phrase: str = ""  # must be findable in the stored text
    absent: str = ""  # must not be stored (site chrome)
    section: str = ""  # a section title the document must have


CASES = (
    # EPUB: inline SVG text, SVG spine items, <object> fallbacks, in-chapter footers, names
    Case(
        "epub/idpf-sous-le-vent.epub",
        phrase="Il en avait souvent rêvé, au moins depuis la",
        warnings=IMAGES,
    ),
    Case(
        "epub/idpf-sous-le-vent_svg-in-spine.epub",
        phrase="Dans la petite école de Bothoa",
        warnings=IMAGES,
    ),
    Case("epub/epubcheck-object-fallback.epub", phrase="Fallback"),
    Case("epub/idpf-quiz-bindings.epub", phrase="What is the name given to planets like Jupiter"),
    Case("epub/idpf-figure-gallery-bindings.epub", phrase="New Moon", warnings=IMAGES),
    Case(
        "epub/idpf-cc-shared-culture.epub",
        phrase="All images and music used to create this work were licenced under Creative",
        warnings=IMAGES,
    ),
    Case("epub/epubcheck-filename-utf8-without-flag.epub", phrase="Call me Ishmael."),
    Case("epub/generated-utf8-chapter-name-without-flag.epub", phrase="字节顺序标记"),
    Case("epub/epubcheck-filename-with-space.epub", phrase="Call me Ishmael."),
    Case("epub/idpf-haruko-html-jpeg.epub", phrase="この文書について", warnings=IMAGES),
    Case("epub/idpf-wasteland-otf-obf.epub", phrase="The shouting and the crying"),
    # DOCX: notes and comments as labelled sections, text boxes once
    Case(
        "docx/mammoth-footnotes.docx",
        phrase="[1] A tachyon walks into a bar.",
        section="Footnotes",
    ),
    Case("docx/mammoth-endnotes.docx", phrase="[ii] Fin.", section="Endnotes"),
    Case("docx/mammoth-footnote-hyperlink.docx", phrase="[1] Example", section="Footnotes"),
    Case(
        "docx/mammoth-comments.docx",
        phrase="[1, Michael Williamson] on “Ouch”: A tachyon walks into a bar.",
        section="Comments",
    ),
    Case(
        "docx/python-docx-comments-rich-para.docx",
        phrase="Text with hyperlink https://google.com embedded.",
        section="Comments",
        warnings=IMAGES,
    ),
    Case("docx/mammoth-text-box.docx", phrase="Datum plane"),
    Case("docx/mammoth-tables.docx", phrase="Top left | Top right"),
    Case("docx/mammoth-strict-format.docx", phrase="Test"),
    Case("docx/mammoth-utf8-bom.docx", phrase="This XML has a byte order mark."),
    Case("docx/python-docx-blk-paras-and-tables.docx", phrase="Donec semper facilisis metus"),
    # headers and footers are running text: read only when the body holds none
    Case(
        "docx/python-docx-hdr-header-footer.docx",
        phrase="section with header",
        absent="Header for section-1",
    ),
    Case(
        "docx/poi-headerFooter.docx",
        phrase="This is a simple header",
        section="Headers and footers",
        warnings=("running_text_only",),
    ),
    Case("docx/mammoth-empty.docx", outcome="no_text"),
    # a table cell inside a content control (a form's drop-down): the row keeps it, in place
    Case("docx/pandoc-sdt-elements.docx", phrase="col1 content | Body copy | col3 content"),
    # a drop cap ("D", a framed paragraph of its own) opens the word it belongs to
    Case("docx/pandoc-drop-cap.docx", phrase="Drop cap in margin."),
    # an emoji as Word 2016 writes it: a symbol reference, the character only in the fallback
    Case("docx/pandoc-emoji-symbols.docx", phrase="Colored:❤️😏📖👌😒"),
    # a broken writer's three <w:body> elements: all three are read, as POI and Tika read them
    Case("docx/poi-MultipleBodyBug.docx", phrase="START BODY 3 The quick, brown fox"),
    # HTML: the article, not the site around it
    Case(
        "html/readability-heise.html",
        phrase="Startwert an 1Password übergeben",
        absent="Billig kontra Apple",
    ),
    Case(
        "html/readability-tmz-1.html",
        phrase="taken from her room",
        absent="Miley Cyrus is NOT Happy",
    ),
    Case(
        "html/readability-lemonde-1.html",
        phrase="informatique et libertés (CNIL)",
        absent="Les rubriques du Monde.fr",
    ),
    Case(
        "html/readability-liberation-1.html",
        phrase="localisés sains et saufs",
        absent="Cours de langues par Internet",
    ),
    Case(
        "html/readability-simplyfound-1.html",
        phrase="charity organization that pushes for a digi",
        absent="You account is not approved yet",
    ),
    Case(
        "html/readability-links-in-tables.html",
        phrase="we hit two complications",
        absent="Deze site gebruikt cookies",  # the cookie banner
    ),
    Case(
        "html/readability-qq.html",
        phrase="开发人员向AlphaG",
        absent="全球首个大型科幻主题公园落户贵阳",
    ),
    Case(
        "html/readability-gmw.html",
        phrase="酒精的影响与海拔高度无关",
        absent="老人制万根“爱心拐棍”",
    ),
    Case(
        "html/readability-001.html",
        phrase="Source files: blanket.js, mocha-blanket.js",
        absent="I code stuff. I take photos.",
    ),
    # a README in a box of class "js-code-nav-container": a script's hook, not navigation
    Case(
        "html/postlight-github.html",
        phrase="marzipanify is an unsupported commandline tool to take an existing iOS",
        absent="Search or jump to",  # the site header's search box
    ),
    # Text encodings
    Case("text/utf8-bom.md", phrase="Le café crème du matin"),
    Case("text/utf16-le-bom.txt", phrase="Plain text travels well."),
    Case("text/utf16-be-no-bom.txt", phrase="byte order mark"),
    Case("text/gb18030.txt", phrase="纯文本文件不写明自己的编码"),
    Case("text/latin1.md", warnings=("legacy_encoding",), phrase="Une façade naïve"),
    Case("text/cp1252-quotes.txt", warnings=("legacy_encoding",), phrase="“Smart quotes” –"),
    Case("text/utf8-damaged.txt", warnings=("replaced_bytes",), phrase="里\ufffd断"),
    Case("text/cyrillic-cp1251.txt", outcome="invalid_encoding"),
)


def _stored(path: Path) -> tuple[str, list[str], list[str]]:
    doc = parse_file(path)
    text = " ".join(p.text for s in doc.sections for p in s.paragraphs)
    return " ".join(text.split()), [s.title for s in doc.sections], [w.code for w in doc.warnings]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_realworld_file_has_its_expected_outcome(case: Case) -> None:
    path = CORPUS / case.name
    if case.outcome != "landed":
        with pytest.raises(ParseError) as info:
            parse_file(path)
        assert info.value.reason == case.outcome
        return
    text, titles, warnings = _stored(path)
    assert tuple(warnings) == case.warnings
    assert case.phrase in text
    if case.absent:
        assert case.absent not in text
    if case.section:
        assert case.section in titles


def test_every_corpus_file_has_a_case_and_a_readme_line() -> None:
    files = {
        f"{fmt}/{p.name}"
        for fmt in FORMATS
        for p in (CORPUS / fmt).iterdir()
        if p.is_file() and p.name != "README.md"
    }
    assert files == {c.name for c in CASES}
    for name in files:
        folder, file = name.split("/")
        assert file in (CORPUS / folder / "README.md").read_text("utf-8")


def test_corpus_stays_small() -> None:
    files = [p for fmt in FORMATS for p in (CORPUS / fmt).iterdir() if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 2_500_000


def test_damaged_utf8_warning_says_how_many_bytes_where() -> None:
    doc = parse_file(CORPUS / "text/utf8-damaged.txt")
    [warning] = doc.warnings
    assert warning.message.startswith("2 bytes that are not valid UTF-8 were replaced")
    assert "(line 3)" in warning.message


def test_docx_text_box_is_stored_once() -> None:
    text, _, _ = _stored(CORPUS / "docx/mammoth-text-box.docx")
    assert text.count("Datum plane") == 1


def test_docx_footnote_marks_stay_in_the_body() -> None:
    doc = parse_file(CORPUS / "docx/mammoth-footnotes.docx")
    assert doc.sections[0].paragraphs[0].text == "Ouch[1].[2]"
    assert doc.title == "mammoth-footnotes"  # the notes' section does not name the document
