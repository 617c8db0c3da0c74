"""engine/parsing on the real shared corpus and on documents built from it in tmp_path."""

from __future__ import annotations

import gc
import json
import os
import re
import time
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import pymupdf as _pymupdf
import pytest

from engine.parsing import (
    PARSER_VERSIONS,
    SUPPORTED_SUFFIXES,
    ParsedDocument,
    ParsedSection,
    ParseError,
    ParseLimits,
    assemble_pdf,
    parse_file,
    parse_pdf_pages,
    plan_parallel_parse,
    release_kept_pdf,
    unique_paths,
)
from engine.parsing import pdf as pdf_module
from engine.parsing.pdf import PAGES_PER_PART, plan_pdf

pymupdf: Any = _pymupdf  # pymupdf ships without type hints

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
DOCS = CORPUS / "docs"

# file -> (format, lang, title, least sections, most sections)
EXPECTED = {
    "debian-reference.en.pdf": ("pdf", "en", "Debian Reference", 440, 460),
    "lshort-zh-cn.pdf": (
        "pdf",
        "zh",
        "The Short Introduction to LaTeX2e (Chinese Simplified)",
        175,
        190,
    ),
    "debian-reference.zh-cn.txt": ("text", "zh", "Debian 参考手册", 440, 480),
    "python-faq/design.html": ("html", "en", "Design and History FAQ", 20, 40),
    "python-faq/extending.html": ("html", "en", "Extending/Embedding FAQ", 10, 30),
    "python-faq/general.html": ("html", "en", "General Python FAQ", 20, 35),
    "python-faq/gui.html": ("html", "en", "Graphic User Interface FAQ", 4, 12),
    "python-faq/installed.html": (
        "html",
        "en",
        "“Why is Python Installed on my Computer?” FAQ",
        2,
        8,
    ),
    "python-faq/library.html": ("html", "en", "Library and Extension FAQ", 30, 45),
    "python-faq/programming.html": ("html", "en", "Programming FAQ", 60, 90),
    "python-faq/windows.html": ("html", "en", "Python on Windows FAQ", 6, 15),
    "nodejs-md/dns.md": ("markdown", "en", "DNS", 45, 60),
    "nodejs-md/events.md": ("markdown", "en", "Events", 75, 95),
    "nodejs-md/readline.md": ("markdown", "en", "Readline", 40, 55),
    "nodejs-md/worker_threads.md": ("markdown", "en", "Worker threads", 45, 65),
    "converted/debian-reference-ch02.zh-cn.docx": (
        "docx",
        "zh",
        "第 2 章 Debian 软件包管理",
        60,
        80,
    ),
    "converted/debian-reference-ch04.zh-cn.epub": ("epub", "zh", "Debian 参考手册 第4章", 18, 30),
    "converted/python-faq-general.epub": ("epub", "en", "General Python FAQ", 20, 35),
    "converted/python-faq-library.docx": ("docx", "en", "Library and Extension FAQ", 40, 55),
}


def norm(text: str) -> str:
    """GOLD-FORMAT.md: NFC, casefold, all whitespace removed."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFC", text).casefold())


def section_text(section: ParsedSection, page: int | None = None) -> str:
    return "\n".join(p.text for p in section.paragraphs if page is None or p.page == page)


def doc_text(doc: ParsedDocument) -> str:
    return "\n".join(section_text(s) for s in doc.sections)


def find_section(doc: ParsedDocument, title: str) -> ParsedSection:
    matches = [s for s in doc.sections if norm(s.title) == norm(title)]
    assert matches, f"no section titled {title!r}"
    return matches[0]


@pytest.fixture(scope="module")
def corpus() -> dict[str, tuple[ParsedDocument, float]]:
    parsed: dict[str, tuple[ParsedDocument, float]] = {}
    for name in EXPECTED:
        # CPU seconds of this process: what parsing costs, not how busy the machine is
        start = time.process_time()
        doc = parse_file(DOCS / name)
        parsed[name] = (doc, time.process_time() - start)
    return parsed


@pytest.fixture(scope="module")
def docs(corpus: dict[str, tuple[ParsedDocument, float]]) -> dict[str, ParsedDocument]:
    return {name: doc for name, (doc, _) in corpus.items()}


def test_corpus_covers_every_document_in_the_folder() -> None:
    on_disk = {
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*")
        if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES
    }
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_document_has_its_format_language_title_and_outline(
    name: str, docs: dict[str, ParsedDocument]
) -> None:
    fmt, lang, title, least, most = EXPECTED[name]
    doc = docs[name]
    assert (doc.format, doc.lang, doc.title) == (fmt, lang, title)
    assert least <= len(doc.sections) <= most
    assert doc.format in PARSER_VERSIONS
    paths = unique_paths([s.title for s in doc.sections], [s.depth for s in doc.sections])
    assert len(set(paths)) == len(paths)
    for section in doc.sections:
        assert section.depth >= 1 and section.title.strip()
        assert section.paragraphs, f"{section.title!r} has no text"
        assert all(p.text.strip() for p in section.paragraphs)
    text = doc_text(doc)
    assert "\ufffd" not in text
    assert not re.search("[\x00-\x08\x0b-\x1f]", text)


def test_whole_corpus_parses_in_seconds(
    corpus: dict[str, tuple[ParsedDocument, float]],
) -> None:
    by_format: dict[str, float] = {}
    for doc, seconds in corpus.values():
        by_format[doc.format] = by_format.get(doc.format, 0.0) + seconds
    print("parse seconds by format:", {k: round(v, 2) for k, v in sorted(by_format.items())})
    assert sum(by_format.values()) < 20


def _gold_evidence() -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for line in (CORPUS / "gold.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        out.extend((item["id"], ev) for ev in item["evidence"])
    return out


@pytest.mark.parametrize(("qid", "evidence"), _gold_evidence())
def test_gold_quote_is_in_the_section_and_page_it_names(
    qid: str, evidence: dict[str, object], docs: dict[str, ParsedDocument]
) -> None:
    doc = docs[str(evidence["document"])]
    quote = norm(str(evidence["quote"]))
    page = evidence["page"]
    assert quote in norm(doc_text(doc)), qid
    named = [s for s in doc.sections if norm(s.title) == norm(str(evidence["section"]))]
    assert named, f"{qid}: no section {evidence['section']!r}"
    wanted_page = page if isinstance(page, int) else None
    assert any(quote in norm(section_text(s, wanted_page)) for s in named), qid


def test_pdf_outline_gives_sections_split_at_the_printed_heading(
    docs: dict[str, ParsedDocument],
) -> None:
    doc = docs["debian-reference.en.pdf"]
    assert doc.pages == 261
    outline = pymupdf.open(DOCS / "debian-reference.en.pdf").get_toc()
    # the outline, plus the front matter (contents, preface) filed under the document title
    assert [s.title for s in doc.sections[1:]] == [entry[1] for entry in outline]
    assert doc.sections[0].title == "Debian Reference" and doc.sections[0].page == 2
    umask = find_section(doc, "Control of permissions for newly created files: umask")
    assert (umask.depth, umask.page) == (3, 38)
    assert umask.paragraphs[0].text == "1.2.4 Control of permissions for newly created files: umask"
    # page 38 starts with the end of the previous section, which keeps that text
    before = doc.sections[doc.sections.index(umask) - 1]
    assert before.title == "Filesystem permissions"
    assert any(p.page == 38 and "numeric mode" in p.text for p in before.paragraphs)


def test_pdf_heading_in_mid_page_leaves_earlier_text_in_previous_section(
    docs: dict[str, ParsedDocument],
) -> None:
    doc = docs["lshort-zh-cn.pdf"]
    assert doc.pages == 139
    organise = find_section(doc, "1.6 文件的组织方式")
    terms = find_section(doc, "1.7 LaTeX 和 TeX 相关的术语和概念")
    assert terms.page == 20 and terms.paragraphs[0].text == "1.7 LATEX 和TEX 相关的术语和概念"
    assert "只排查错误" in section_text(organise, 20)
    assert "只排查错误" not in section_text(terms)


def test_pdf_running_headers_and_page_numbers_are_dropped(
    docs: dict[str, ParsedDocument],
) -> None:
    en = [p.text for s in docs["debian-reference.en.pdf"].sections for p in s.paragraphs]
    assert not [t for t in en if re.fullmatch(r"Debian Reference \d+ / 233", t)]
    assert not [t for t in en if re.fullmatch(r"Debian Reference [ivxl]+", t)]
    lshort = docs["lshort-zh-cn.pdf"]
    zh = [p for s in lshort.sections for p in s.paragraphs]
    assert not [p for p in zh if re.match(r"§\s*\d", p.text)]  # "§1.7 LATEX 和TEX … 9"
    assert not [p for p in zh if re.match(r"\d+ 第.章", p.text)]  # "8 第一章 LATEX 的基本概念"
    # chapter openings print their page number alone at the foot: "i" on page 3, "1" on 13
    for page in (3, 13):
        assert [p.text for p in zh if p.page == page][-1] not in ("i", "1")


def test_chinese_wrapped_lines_join_without_spaces(docs: dict[str, ParsedDocument]) -> None:
    text = doc_text(docs["debian-reference.zh-cn.txt"])
    # "同时" ends one line of the file, "按下" starts the next
    assert "否则你可以同时按下左 Alt 键和F1—F6之一的键在虚拟控制台间切换" in text
    pdf = doc_text(docs["lshort-zh-cn.pdf"])
    assert "有的时候我们并不需要这样，而是用\\input 命令" in pdf


def test_english_wrapped_lines_join_with_one_space(docs: dict[str, ParsedDocument]) -> None:
    section = find_section(docs["debian-reference.en.pdf"], "Filesystem permissions")
    assert any(
        "chgrp(1) is used from the file’s owner or root account to change the group" in p.text
        for p in section.paragraphs
    )


def test_code_listings_keep_their_line_breaks(docs: dict[str, ParsedDocument]) -> None:
    script = find_section(docs["debian-reference.en.pdf"], "The shell script")
    assert "#!/bin/sh\n... command lines" in [p.text for p in script.paragraphs]
    events = doc_text(docs["nodejs-md/events.md"])
    assert "class MyEmitter extends EventEmitter {}\n\nconst myEmitter = new MyEmitter();" in events
    programming = doc_text(docs["python-faq/programming.html"])
    assert ">>> x = 10\n>>> def bar():\n...     print(x)" in programming


def test_text_headings_have_depth_by_numbering_and_contents_stay_body(
    docs: dict[str, ParsedDocument],
) -> None:
    doc = docs["debian-reference.zh-cn.txt"]
    depths = {s.title: s.depth for s in doc.sections}
    assert depths["第 1 章 GNU/Linux 教程"] == 1
    assert depths["1.1. 控制台基础"] == 2
    assert depths["1.1.6. 虚拟控制台"] == 3
    assert depths["附录 A. 附录"] == 1
    # the table of contents and the list of tables are listings, not headings
    assert "1. GNU/Linux 教程" not in depths
    assert "1.1. 有趣的文本模式程序包列表" not in depths
    front = section_text(doc.sections[0])
    assert "1. GNU/Linux 教程" in front and "1.1. 有趣的文本模式程序包列表" in front


def test_html_skips_sphinx_chrome_and_strips_site_suffix(docs: dict[str, ParsedDocument]) -> None:
    doc = docs["python-faq/design.html"]
    titles = [s.title for s in doc.sections]
    assert titles[0] == "Design and History FAQ"
    for chrome in ("Navigation", "This Page", "Table of Contents", "Previous topic"):
        assert chrome not in titles
    text = doc_text(doc)
    for chrome_text in ("¶", "Quick search", "Report a Bug", "Show Source", "Last updated on"):
        assert chrome_text not in text
    faq = find_section(doc, "How are dictionaries implemented in CPython?")
    assert faq.depth == 2 and faq.paragraphs[0].text == faq.title


def test_markdown_heading_titles_drop_inline_markup(docs: dict[str, ParsedDocument]) -> None:
    doc = docs["nodejs-md/events.md"]
    section = find_section(doc, "emitter.setMaxListeners(n)")
    assert section.depth == 3
    assert section.paragraphs[0].text == "`emitter.setMaxListeners(n)`"
    assert "introduced_in" not in doc_text(doc)  # HTML comments are not text


def test_docx_headings_from_styles_and_tables_as_rows(docs: dict[str, ParsedDocument]) -> None:
    doc = docs["converted/debian-reference-ch02.zh-cn.docx"]
    assert find_section(doc, "2.7.12. equivs 软件包").depth == 3
    assert find_section(doc, "第 2 章 Debian 软件包管理").depth == 1
    rows = [p.text for s in doc.sections for p in s.paragraphs if " | " in p.text]
    assert any(r.startswith("软件包 | 流行度 | 大小 | 说明") for r in rows)


def test_epub_follows_spine_and_takes_title_from_metadata(
    docs: dict[str, ParsedDocument],
) -> None:
    doc = docs["converted/debian-reference-ch04.zh-cn.epub"]
    titles = [s.title for s in doc.sections]
    assert titles.index("第 4 章 认证和访问控制") < titles.index("4.1. 一般的 Unix 认证")
    assert titles.index("4.7.1. sudo") < titles.index("4.7.4. Linux 安全特性")
    assert find_section(doc, "4.7.1. sudo").depth == 3


_PICTURE_BOOK_OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">picture-book</dc:identifier><dc:title>A Apple Pie</dc:title>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="a" href="a.xhtml" media-type="application/xhtml+xml"/>
    <item id="b-page" href="b.png" media-type="image/png" fallback="b-text"/>
    <item id="b-text" href="b.xhtml" media-type="application/xhtml+xml"/>
    <item id="c-page" href="c.png" media-type="image/png" fallback="c-page"/>
  </manifest>
  <spine><itemref idref="a"/><itemref idref="b-page"/><itemref idref="c-page"/></spine>
</package>"""


def _xhtml(text: str) -> str:
    return (
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>'
        f"<body><p>{text}</p></body></html>"
    )


def test_epub_page_images_in_the_spine_are_read_through_their_fallback(tmp_path: Path) -> None:
    """A picture book's spine names page images; their manifest fallback (an XHTML text of
    the page) is what a reading system without that media shows, and what is imported. A
    fallback chain that loops ends without text, not in a hang."""
    path = tmp_path / "picture-book.epub"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
            '<rootfiles><rootfile full-path="OPS/book.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        zf.writestr("OPS/book.opf", _PICTURE_BOOK_OPF)
        zf.writestr("OPS/a.xhtml", _xhtml("A was an apple pie."))
        zf.writestr("OPS/b.xhtml", _xhtml("B bit it: a boy takes a bite of the pie."))
        zf.writestr("OPS/b.png", b"\x89PNG\r\n\x1a\n")
        zf.writestr("OPS/c.png", b"\x89PNG\r\n\x1a\n")
    doc = parse_file(path)
    text = " ".join(p.text for s in doc.sections for p in s.paragraphs)
    assert "A was an apple pie." in text and "B bit it: a boy takes a bite" in text


def _copy_zip(src: Path, dst: Path, edits: list[tuple[str, bytes, bytes]]) -> None:
    """Copy an archive, replacing bytes in the named members."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            for member, old, new in edits:
                if info.filename == member:
                    assert old in data
                    data = data.replace(old, new)
            zout.writestr(info, data)


def test_docx_localized_heading_styles_work_through_outline_level(
    tmp_path: Path, docs: dict[str, ParsedDocument]
) -> None:
    src = DOCS / "converted/debian-reference-ch02.zh-cn.docx"
    dst = tmp_path / "localized.docx"
    # Chinese Word names its heading styles "标题 3" with a numeric id; only the outline
    # level in styles.xml says it is a heading.
    _copy_zip(
        src,
        dst,
        [
            ("word/styles.xml", b'w:styleId="Heading3"', b'w:styleId="3"'),
            ("word/styles.xml", b'w:val="Heading 3"', 'w:val="标题 3"'.encode()),
            ("word/document.xml", b'w:pStyle w:val="Heading3"', b'w:pStyle w:val="3"'),
        ],
    )
    localized = parse_file(dst)
    original = docs["converted/debian-reference-ch02.zh-cn.docx"]
    assert [(s.title, s.depth) for s in localized.sections] == [
        (s.title, s.depth) for s in original.sections
    ]


def test_pdf_without_outline_gets_headings_from_font_size(tmp_path: Path) -> None:
    pdf = pymupdf.open(DOCS / "debian-reference.en.pdf")
    pdf.select(list(range(28, 48)))  # chapter 1, pages 29-48
    pdf.set_toc([])
    path = tmp_path / "no-outline.pdf"
    pdf.save(path)
    doc = parse_file(path)
    titles = [s.title for s in doc.sections]
    assert titles[0] == "GNU/Linux tutorials"  # "Chapter 1" above it is part of the heading
    assert doc.sections[0].paragraphs[0].text == "Chapter 1 GNU/Linux tutorials"
    assert "1.1.6 Virtual consoles" in titles
    assert "1.2.13 tmpfs" in titles
    umask = find_section(doc, "1.2.4 Control of permissions for newly created files: umask")
    assert umask.page == 10
    assert norm("is restricted by the umask shell builtin command") in norm(section_text(umask, 10))
    depths = {s.title: s.depth for s in doc.sections}
    assert depths["GNU/Linux tutorials"] < depths["1.2 Unix-like filesystem"]
    assert (
        depths["1.2 Unix-like filesystem"]
        < depths["1.2.4 Control of permissions for newly created files: umask"]
    )


def test_pdf_outline_that_matches_no_printed_heading_falls_back_to_font_size(
    tmp_path: Path,
) -> None:
    pdf = pymupdf.open(DOCS / "debian-reference.en.pdf")
    pdf.select(list(range(28, 48)))
    pdf.set_toc([[1, "Scanned part one", 1], [1, "Scanned part two", 1], [2, "Notes", 2]])
    path = tmp_path / "stale-outline.pdf"
    pdf.save(path)
    titles = [s.title for s in parse_file(path).sections]
    assert "1.2.13 tmpfs" in titles and "Scanned part one" not in titles


def _pdf_lines(path: Path, lines: list[list[tuple[float, str, str]]]) -> None:
    """One page, a line per item: (x, text, font) pieces at 11 pt, spaced like body text;
    an empty line leaves a paragraph gap."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    y = 72.0
    for pieces in lines:
        for x, text, font in pieces:
            page.insert_text((x, y), text, fontname=font, fontsize=11)
        y += 14 if pieces else 20
    pdf.save(path)


def test_pdf_line_of_several_fonts_is_styled_by_most_of_its_characters(tmp_path: Path) -> None:
    path = tmp_path / "mixed.pdf"
    bell = ": the bell\x07 character and this longer plain text follow it"
    _pdf_lines(
        path,
        [
            [(72, "Plain body text that runs across the page as the opening line,", "helv")],
            [(72, "and a second line of the same paragraph ends here.", "helv")],
            [],
            [(72, "2.1 Installing", "hebo"), (150, "the tools", "hebo")],
            [],
            [(72, "Note", "hebo"), (98, bell, "helv")],
            [(72, "on the next line of the note, which is plain as well.", "helv")],
            [(72, "Term", "helv"), (300, "its definition, set apart on the same line.", "helv")],
        ],
    )
    preamble, section = parse_file(path).sections
    # Bold throughout, set off and numbered: a heading, its two pieces one row.
    assert section.title == preamble.title == "2.1 Installing the tools"
    assert preamble.paragraphs[0].text.endswith(
        "opening line, and a second line of the same paragraph ends here."
    )
    # Mostly plain: body text, joined with the next line, without the control character.
    assert [p.text for p in section.paragraphs] == [
        "2.1 Installing the tools",
        "Note: the bell character and this longer plain text follow it on the next line of "
        "the note, which is plain as well.",
        "Term its definition, set apart on the same line.",
    ]


def test_text_underlined_headings_and_numbered_headings(tmp_path: Path) -> None:
    source = (DOCS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")
    start = source.index("    在默认的 Debian 系统中")
    body = source[start : source.index("\n1.1.7.", start)]
    text = (
        "Console notes\n=============\n\n"
        + body
        + "\nShutting down\n-------------\n\n"
        + body
        + "\n2.3.4 Numbered heading\n\n"
        + body
    )
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    doc = parse_file(path)
    assert [(s.title, s.depth) for s in doc.sections] == [
        ("Console notes", 1),
        ("Shutting down", 2),
        ("2.3.4 Numbered heading", 3),
    ]
    assert doc.title == "Console notes"
    assert all("按下左 Alt 键" in section_text(s) for s in doc.sections)
    assert "=====" not in doc_text(doc)


def test_text_without_headings_is_one_section_titled_by_the_document(tmp_path: Path) -> None:
    source = (DOCS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")
    start = source.index("    在默认的 Debian 系统中")
    body = source[start : source.index("\n1.1.7.", start)]
    path = tmp_path / "虚拟控制台.txt"
    path.write_text(body, encoding="utf-8")
    doc = parse_file(path)
    assert [(s.title, s.depth) for s in doc.sections] == [("虚拟控制台", 1)]
    assert doc.title == "虚拟控制台" and doc.lang == "zh"


def test_markdown_ignores_headings_in_code_and_front_matter(tmp_path: Path) -> None:
    source = (DOCS / "nodejs-md/events.md").read_text(encoding="utf-8")
    part = source[: source.index("## Asynchronous vs. synchronous")]
    text = (
        "---\ntitle: Node events notes\n# not: a heading\n---\n"
        + "Events notes\r\n============\r\n\r\n"
        + part
        + "\n```sh\n# a shell comment, not a heading\n```\n\n"
        + "~~~\n## still code\n~~~\n\n"
        + "    # indented code, not a heading\n\n"
        + "Setext heading\n--------------\n\nSome text.\n"
    )
    path = tmp_path / "notes.md"
    path.write_text(text, encoding="utf-8")
    doc = parse_file(path)
    assert doc.title == "Node events notes"
    assert [(s.title, s.depth) for s in doc.sections] == [
        ("Events notes", 1),
        ("Events", 1),
        ("Passing arguments and this to listeners", 2),
        ("Setext heading", 2),
    ]
    assert [p.text for p in doc.sections[0].paragraphs] == ["Events notes"]
    code = [p.text for p in doc.sections[2].paragraphs]
    assert "# a shell comment, not a heading" in code
    assert "## still code" in code
    assert "# indented code, not a heading" in code
    assert "not: a heading" not in doc_text(doc)


def test_markdown_keeps_no_script_and_no_paragraph_of_tags_alone(tmp_path: Path) -> None:
    """A docs page's <script> block and its wrapper tags hold no text a reader sees; text
    written with tags, code that shows tags and autolinks stay as written."""
    text = (
        "# Reactivity\n\n"
        '<script setup>\nimport { ref } from "vue"\nconst count = ref(0)\n</script>\n\n'
        "<style>\n.demo { color: red }\n</style>\n\n"
        '<div class="options-api">\n\n'
        "In the Options API we use the `data` option.\n\n"
        "</div>\n\n"
        '<p align="center"><img src="logo.png"></p>\n\n'
        "Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to copy.\n\n"
        "Write `<div>` for a block.\n\n"
        "<https://vuejs.org>\n\n"
        "```html\n<script>\nalert(1)\n</script>\n```\n"
    )
    path = tmp_path / "reactivity.md"
    path.write_text(text, encoding="utf-8")
    paragraphs = [p.text for s in parse_file(path).sections for p in s.paragraphs]
    assert paragraphs[1:] == [
        "In the Options API we use the `data` option.",
        "Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to copy.",
        "Write `<div>` for a block.",
        "<https://vuejs.org>",
        "<script>\nalert(1)\n</script>",
    ]


@pytest.mark.parametrize(
    ("source", "suffix", "fmt"),
    [
        ("python-faq/gui.html", ".htm", "html"),
        ("python-faq/gui.html", ".xhtml", "html"),
        ("nodejs-md/dns.md", ".markdown", "markdown"),
        ("debian-reference.zh-cn.txt", ".text", "text"),
        ("debian-reference.en.pdf", ".PDF", "pdf"),
    ],
)
def test_every_supported_suffix_reaches_its_parser(
    tmp_path: Path, source: str, suffix: str, fmt: str
) -> None:
    path = tmp_path / f"copy{suffix}"
    path.write_bytes((DOCS / source).read_bytes())
    assert suffix.lower() in SUPPORTED_SUFFIXES
    doc = parse_file(path)
    assert doc.format == fmt and fmt in PARSER_VERSIONS


def test_html_charset_comes_from_the_meta_tag(tmp_path: Path) -> None:
    with zipfile.ZipFile(DOCS / "converted/debian-reference-ch04.zh-cn.epub") as zf:
        page = zf.read("EPUB/text/ch002.xhtml").decode("utf-8")
    utf8 = tmp_path / "utf8.html"
    utf8.write_text(page, encoding="utf-8")
    gb = tmp_path / "gb.html"
    gb.write_bytes(page.replace('charset="utf-8"', 'charset="gb18030"').encode("gb18030"))
    expected, got = parse_file(utf8), parse_file(gb)
    assert got.sections == expected.sections
    assert find_section(got, "4.6.4. root 密码安全").depth == 3


@pytest.mark.parametrize("name", ["debian-reference.en.pdf", "lshort-zh-cn.pdf"])
@pytest.mark.parametrize(("pages_per_part", "session"), [(PAGES_PER_PART, ""), (5, ""), (5, "s")])
def test_a_pdf_parsed_in_page_ranges_is_exactly_the_document_of_one_pass(
    name: str, pages_per_part: int, session: str, docs: dict[str, ParsedDocument]
) -> None:
    path = DOCS / name
    plan = plan_pdf(path, ParseLimits(), pages_per_part)
    assert plan is not None and len(plan.ranges) >= 2
    assert plan.ranges[0][0] == 0 and plan.ranges[-1][1] == plan.page_count
    assert all(a[1] == b[0] for a, b in zip(plan.ranges, plan.ranges[1:], strict=False))
    # Ranges come back in any order, as parallel workers finish them; with a session, one
    # process reads them all from the document it keeps open.
    parts = [
        parse_pdf_pages(path, start, end, session=session) for start, end in reversed(plan.ranges)
    ]
    release_kept_pdf()
    split = assemble_pdf(path, ParseLimits(), plan, parts)
    # Sections, outline headings, page numbers, running headers dropped: all identical.
    assert split == docs[name]


def test_only_long_healthy_pdfs_are_planned_for_parallel_parsing(tmp_path: Path) -> None:
    assert plan_parallel_parse(DOCS / "debian-reference.en.pdf") is not None
    assert plan_parallel_parse(DOCS / "debian-reference.zh-cn.txt") is None
    short = pymupdf.open(DOCS / "debian-reference.en.pdf")
    short.select(list(range(2 * PAGES_PER_PART - 1)))
    short.save(tmp_path / "short.pdf")
    assert plan_parallel_parse(tmp_path / "short.pdf") is None
    # Damaged, mislabelled or over-limit files are left to parse_file, which says why.
    data = (DOCS / "debian-reference.en.pdf").read_bytes()
    (tmp_path / "cut.pdf").write_bytes(data[: len(data) // 2])
    (tmp_path / "image.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + data[:4096])
    for bad in ("cut.pdf", "image.pdf"):
        assert plan_parallel_parse(tmp_path / bad) is None
        with pytest.raises(ParseError):
            parse_file(tmp_path / bad)
    tiny = ParseLimits(max_file_bytes=1024)
    assert plan_parallel_parse(DOCS / "debian-reference.en.pdf", tiny) is None


def test_extracting_pdf_pages_leaves_process_settings_as_they_were() -> None:
    """Garbage collection and pymupdf's glyph-box setting are changed only while pages are
    read (the app renders PDF pages in its own process with pymupdf's defaults)."""
    path = DOCS / "lshort-zh-cn.pdf"  # 139 pages
    tools = pymupdf.TOOLS
    assert gc.isenabled() and not tools.unset_quad_corrections()
    assert parse_pdf_pages(path, 0, 2).pages[1]
    assert gc.isenabled() and not tools.unset_quad_corrections()
    with pytest.raises(ParseError):
        parse_pdf_pages(path, 137, 141)  # fails past the last page, mid-extraction
    assert gc.isenabled() and not tools.unset_quad_corrections()
    gc.disable()
    tools.unset_quad_corrections(True)
    try:
        parse_pdf_pages(path, 0, 2)
        assert not gc.isenabled() and tools.unset_quad_corrections()
    finally:
        gc.enable()
        tools.unset_quad_corrections(False)


def test_ranges_of_one_session_open_the_pdf_once_and_hold_no_file_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker reading several ranges of one parse opens the file once (its fonts load
    once); the kept document was read from the file's bytes, so the file stays free to be
    deleted or renamed (Windows refuses both while a handle is open). Another session, or
    the file saved again, opens it afresh."""
    path = tmp_path / "book.pdf"
    path.write_bytes((DOCS / "lshort-zh-cn.pdf").read_bytes())
    opened: list[bool] = []
    real_open = pdf_module.open_pdf

    def counting_open(*args: Any, **kwargs: Any) -> Any:
        opened.append(kwargs.get("data") is not None)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(pdf_module, "open_pdf", counting_open)
    try:
        first = parse_pdf_pages(path, 0, 3, session="a")
        assert parse_pdf_pages(path, 3, 6, session="a").pages
        assert opened == [True]
        if Path("/proc/self/fd").is_dir():
            held = {os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}
            assert str(path.resolve()) not in held
        assert parse_pdf_pages(path, 0, 3, session="b").pages == first.pages
        assert len(opened) == 2
        with path.open("ab") as f:  # saved again between two ranges of one session
            f.write(b"\n% appended\n")
        assert parse_pdf_pages(path, 3, 6, session="b").stamp != first.stamp
        assert len(opened) == 3
    finally:
        release_kept_pdf()


def test_ranges_read_from_a_changed_pdf_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes((DOCS / "debian-reference.en.pdf").read_bytes())
    plan = plan_pdf(path, ParseLimits(), 100)
    assert plan is not None
    first = parse_pdf_pages(path, *plan.ranges[0])
    with path.open("ab") as f:  # saved again meanwhile
        f.write(b"\n% appended\n")
    rest = [parse_pdf_pages(path, start, end) for start, end in plan.ranges[1:]]
    with pytest.raises(ParseError) as raised:
        assemble_pdf(path, ParseLimits(), plan, [first, *rest])
    assert raised.value.reason == "changed"
