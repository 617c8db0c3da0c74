"""Bad input fails alone with the right reason, fast, and never with anything but ParseError.

Every bad file is made here, in tmp_path, from the real corpus documents.
"""

from __future__ import annotations

import pickle
import random
import re
import time
import zipfile
from pathlib import Path
from typing import Any

import anyio
import anyio.to_process
import pymupdf as _pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.parsing import ParsedDocument, ParseError, ParseLimits, parse_file, unique_paths

pymupdf: Any = _pymupdf  # pymupdf ships without type hints

DOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"
EN_PDF = DOCS / "debian-reference.en.pdf"
ZH_TXT = DOCS / "debian-reference.zh-cn.txt"
DOCX = DOCS / "converted/debian-reference-ch02.zh-cn.docx"
EPUB = DOCS / "converted/debian-reference-ch04.zh-cn.epub"
MIB = 1024 * 1024


def reason_of(path: Path, limits: ParseLimits | None = None) -> str:
    with pytest.raises(ParseError) as info:
        parse_file(path) if limits is None else parse_file(path, limits)
    assert info.value.message.strip() and "\n" not in info.value.message
    return info.value.reason


def zh_sample() -> str:
    """About 8 KB of the Chinese Debian Reference, headings included."""
    text = ZH_TXT.read_text(encoding="utf-8")
    found = re.search(r"^第\s1\s章\sGNU/Linux 教程$", text, re.MULTILINE)
    assert found is not None
    start = found.start()
    return text[start : start + 8000]


# --- empty, unsupported, misnamed -------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".pdf", ".txt", ".md", ".html", ".docx", ".epub"])
def test_zero_byte_file_is_empty_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_bytes(b"")
    assert reason_of(path) == "empty_file"


def test_unsupported_suffix_is_unsupported_type(tmp_path: Path) -> None:
    path = tmp_path / "slides.pptx"
    path.write_bytes(DOCX.read_bytes())
    assert reason_of(path) == "unsupported_type"
    no_suffix = tmp_path / "README"
    no_suffix.write_text("hello", encoding="utf-8")
    assert reason_of(no_suffix) == "unsupported_type"


def test_random_bytes_named_pdf_are_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "random.pdf"
    path.write_bytes(random.Random(7).randbytes(50_000))
    assert reason_of(path) == "corrupt"


def test_png_named_pdf_is_unsupported_type(tmp_path: Path) -> None:
    page = pymupdf.open(EN_PDF)[40]
    path = tmp_path / "picture.pdf"
    path.write_bytes(page.get_pixmap(dpi=30).tobytes("png"))
    assert reason_of(path) == "unsupported_type"


def test_pdf_named_txt_is_unsupported_type(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(EN_PDF.read_bytes()[:100_000])
    assert reason_of(path) == "unsupported_type"


def test_docx_that_is_not_a_zip_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "letter.docx"
    path.write_bytes(ZH_TXT.read_bytes()[:20_000])
    assert reason_of(path) == "corrupt"


def test_directory_named_like_a_document_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "folder.pdf"
    path.mkdir()
    assert reason_of(path) == "corrupt"


def test_file_over_the_size_limit_is_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text(zh_sample(), encoding="utf-8")
    assert reason_of(path, ParseLimits(max_file_bytes=1000)) == "too_large"


# --- PDF ----------------------------------------------------------------------------------------


def test_truncated_pdf_is_corrupt(tmp_path: Path) -> None:
    data = EN_PDF.read_bytes()
    path = tmp_path / "half.pdf"
    path.write_bytes(data[: len(data) // 2])
    assert reason_of(path) == "corrupt"


def test_pdf_cut_short_near_its_end_is_corrupt(tmp_path: Path) -> None:
    data = EN_PDF.read_bytes()
    path = tmp_path / "almost.pdf"
    path.write_bytes(data[: len(data) - 40_000])
    assert reason_of(path) == "corrupt"


def test_password_protected_pdf_is_encrypted(tmp_path: Path) -> None:
    pdf = pymupdf.open(EN_PDF)
    pdf.select([36, 37])
    path = tmp_path / "locked.pdf"
    pdf.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    assert reason_of(path) == "encrypted"


def test_pdf_with_owner_password_only_still_parses(tmp_path: Path) -> None:
    pdf = pymupdf.open(EN_PDF)
    pdf.select([36, 37])
    path = tmp_path / "restricted.pdf"
    pdf.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", permissions=0)
    doc = parse_file(path)
    assert doc.pages == 2 and "umask" in "".join(p.text for s in doc.sections for p in s.paragraphs)


def test_scanned_pdf_without_text_layer_is_no_text_layer(tmp_path: Path) -> None:
    source = pymupdf.open(EN_PDF)
    scan = pymupdf.open()
    for number in (36, 37):
        pixmap = source[number].get_pixmap(dpi=50)
        page = scan.new_page(width=source[number].rect.width, height=source[number].rect.height)
        page.insert_image(page.rect, pixmap=pixmap)
    path = tmp_path / "scan.pdf"
    scan.save(path)
    # with OCR on, the pages are recognised (tests/engine/test_pdf_ocr.py)
    assert reason_of(path, ParseLimits(ocr=False)) == "no_text_layer"


# --- text encodings ----------------------------------------------------------------------------


def test_utf8_with_a_dropped_byte_imports_with_a_replacement_and_a_warning(
    tmp_path: Path,
) -> None:
    data = zh_sample().encode("utf-8")
    cut = data.index("虚拟".encode()) + 1  # drop one byte from the middle of a character
    path = tmp_path / "broken.txt"
    path.write_bytes(data[:cut] + data[cut + 1 :])
    doc = parse_file(path)
    text = "".join(p.text for s in doc.sections for p in s.paragraphs)
    assert text.count("\ufffd") == 1
    assert "拟" in text  # the next character survives
    line = data[:cut].count(b"\n") + 1
    [warning] = doc.warnings
    assert warning.code == "replaced_bytes"
    assert warning.message.startswith(
        "2 bytes that are not valid UTF-8 were replaced"
    )  # the rest of 虚
    assert f"line {line})" in warning.message


def test_many_bad_bytes_in_utf8_text_are_still_invalid_encoding(tmp_path: Path) -> None:
    data = bytearray(zh_sample().encode("utf-8"))
    for i in range(0, len(data), 7):
        data[i] = 0xFF
    path = tmp_path / "noise.txt"
    path.write_bytes(bytes(data))
    assert reason_of(path) == "invalid_encoding"


def test_latin1_markdown_imports_as_windows_1252_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("# Café crème\n\nDéjà vu à la française, naïve façade.\n".encode("latin-1"))
    doc = parse_file(path)
    assert doc.title == "Café crème"
    texts = [p.text for s in doc.sections for p in s.paragraphs]
    assert "Déjà vu à la française, naïve façade." in texts
    assert [w.code for w in doc.warnings] == ["legacy_encoding"]


def test_cp1252_quotes_decode_as_typography(tmp_path: Path) -> None:
    path = tmp_path / "quotes.txt"
    path.write_bytes("He said “hello” – it’s fine.\n".encode("cp1252"))
    assert parse_file(path).sections[0].paragraphs[0].text == "He said “hello” – it’s fine."


def test_cyrillic_and_shift_jis_bytes_are_not_taken_for_latin1(tmp_path: Path) -> None:
    for name, data in (
        ("ru.txt", "Привет, как дела? Это русский текст.\n".encode("cp1251")),
        ("ja.txt", "日本語のテキストです。これはテスト。\n".encode("shift_jis")),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        assert reason_of(path) == "invalid_encoding"


def test_binary_data_named_txt_is_invalid_encoding(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(bytes(range(32)) * 200)
    assert reason_of(path) == "invalid_encoding"


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-8", b"\xef\xbb\xbf"),
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-32-le", b"\xff\xfe\x00\x00"),
        ("gb18030", b""),
    ],
)
def test_text_encodings_decode_to_the_same_document(tmp_path: Path, codec: str, bom: bytes) -> None:
    text = zh_sample()
    reference = tmp_path / "utf8.txt"
    reference.write_bytes(text.encode("utf-8"))
    encoded = tmp_path / f"{codec}.txt"
    encoded.write_bytes(bom + text.encode(codec))
    expected, got = parse_file(reference), parse_file(encoded)
    assert got.sections == expected.sections
    assert got.lang == "zh"
    assert not got.sections[0].paragraphs[0].text.startswith("\ufeff")


TRADITIONAL = (
    "第一章 安裝\n\n這是一份繁體中文的說明文件，介紹如何在電腦上安裝與設定軟體。"
    "請先閱讀使用說明，確認系統需求，再開始操作。若安裝過程中出現錯誤訊息，"
    "請記下訊息內容並重新啟動電腦。\n"
)


def test_traditional_chinese_in_big5_reads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "big5.txt"
    path.write_bytes(TRADITIONAL.encode("big5"))
    doc = parse_file(path)
    body = "".join(p.text for s in doc.sections for p in s.paragraphs)
    assert "這是一份繁體中文的說明文件" in body and "重新啟動電腦" in body
    assert doc.lang == "zh" and doc.warnings == ()


@pytest.mark.parametrize(
    ("codec", "text"),
    [
        ("euc_kr", "역사적 예수 연구자들은 복음서의 기록을 비교하고, 문헌을 함께 읽는다. " * 4),
        ("euc_jp", "これは日本語の説明書です。ファイルを開いて、設定を確認してください。" * 4),
    ],
)
def test_korean_and_japanese_euc_are_refused_not_read_as_chinese(
    tmp_path: Path, codec: str, text: str
) -> None:
    """Their bytes also decode as GB18030, into Chinese-looking nonsense that landed as ready;
    no reading is better than a wrong one."""
    path = tmp_path / f"{codec}.txt"
    path.write_bytes(text.encode(codec))
    assert reason_of(path) == "invalid_encoding"


def test_utf8_cut_short_is_not_misread_as_gb18030(tmp_path: Path) -> None:
    # Valid GB18030 bytes that are really UTF-8 with one byte dropped would decode to
    # plausible-looking but wrong Han characters; they are read as UTF-8 with one U+FFFD.
    data = "(发布时会省略部分格式".encode()
    path = tmp_path / "short.txt"
    path.write_bytes(data[:-1])
    doc = parse_file(path)
    assert doc.sections[0].paragraphs[0].text == "(发布时会省略部分格\ufffd"
    assert [w.code for w in doc.warnings] == ["replaced_bytes"]


def test_nul_and_control_characters_are_stripped(tmp_path: Path) -> None:
    text = zh_sample().replace("控制台", "控\x00制\x07台")
    path = tmp_path / "controls.txt"
    path.write_text(text, encoding="utf-8")
    doc = parse_file(path)
    body = "".join(p.text for s in doc.sections for p in s.paragraphs)
    assert "控制台" in body and "\x00" not in body and "\x07" not in body


def test_whitespace_only_file_is_no_text(tmp_path: Path) -> None:
    path = tmp_path / "blank.md"
    path.write_text(" \n\n\t\n   \n", encoding="utf-8")
    assert reason_of(path) == "no_text"


# --- Markdown scale -----------------------------------------------------------------------------


def test_two_megabyte_single_line_markdown_parses_quickly(tmp_path: Path) -> None:
    words = (DOCS / "nodejs-md/events.md").read_text(encoding="utf-8").split()
    line = " ".join(words)
    line = (line + " ") * (2 * MIB // len(line) + 1)
    path = tmp_path / "one-line.md"
    path.write_text("# " + line[: 2 * MIB], encoding="utf-8")
    start = time.perf_counter()
    doc = parse_file(path)
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0, f"{elapsed:.1f}s"
    assert len(doc.sections) == 1 and len(doc.sections[0].title) <= 300
    assert len(doc.sections[0].paragraphs[0].text) > 2 * MIB - 10


def test_pathological_markdown_lines_parse_quickly(tmp_path: Path) -> None:
    path = tmp_path / "nasty.md"
    nasty = [
        "#" * 200_000 + " x",
        "[" * 200_000,
        "* " * 200_000 + "x",
        "`" * 200_000,
        "<!--" + "-" * 200_000,
    ]
    path.write_text("# Title\n\n" + "\n\n".join(nasty) + "\n", encoding="utf-8")
    start = time.perf_counter()
    doc = parse_file(path)
    assert time.perf_counter() - start < 3.0
    assert doc.sections[0].title == "Title"


def test_five_thousand_nested_headings_parse_quickly(tmp_path: Path) -> None:
    titles = [
        line[4:]
        for line in (DOCS / "nodejs-md/events.md").read_text().splitlines()
        if line.startswith("### ")
    ]
    lines = []
    for i in range(5000):
        level = i % 6 + 1
        lines.append(f"{'#' * level} {titles[i % len(titles)]}\n\nBody {i}.\n")
    path = tmp_path / "nested.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    start = time.perf_counter()
    doc = parse_file(path)
    paths = unique_paths([s.title for s in doc.sections], [s.depth for s in doc.sections])
    assert time.perf_counter() - start < 3.0
    assert len(doc.sections) == 5000 and len(set(paths)) == 5000
    assert [s.depth for s in doc.sections[:7]] == [1, 2, 3, 4, 5, 6, 1]


def test_more_headings_than_the_limit_is_too_large(tmp_path: Path) -> None:
    path = tmp_path / "many.md"
    path.write_text("".join(f"## Heading {i}\n\ntext\n\n" for i in range(50)), encoding="utf-8")
    assert reason_of(path, ParseLimits(max_sections=20)) == "too_large"


# --- archives -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 MB of zeros in one member, under 1 MB on disk, written in streamed chunks."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("mimetype", "application/epub+zip")
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            chunk = b"\0" * MIB
            for _ in range(300):
                member.write(chunk)
    assert path.stat().st_size < MIB
    return path


@pytest.mark.parametrize("suffix", [".docx", ".epub"])
def test_zip_bomb_is_refused_from_declared_sizes(
    tmp_path: Path, zip_bomb: Path, suffix: str
) -> None:
    path = tmp_path / f"bomb{suffix}"
    path.write_bytes(zip_bomb.read_bytes())
    start = time.perf_counter()
    assert reason_of(path) == "archive_too_large"
    assert time.perf_counter() - start < 0.5  # refused before inflating anything


def test_member_with_absurd_compression_ratio_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ratio.docx"
    with zipfile.ZipFile(DOCX) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("word/media/blank.bin", b"\0" * (8 * MIB))
    limits = ParseLimits(ratio_floor_bytes=MIB)  # total stays far under max_archive_bytes
    assert reason_of(path, limits) == "archive_too_large"


@pytest.mark.parametrize("name", ["../../evil", "/etc/passwd", "word/../../evil", "C:/evil"])
@pytest.mark.parametrize("source", [DOCX, EPUB])
def test_archive_member_pointing_outside_is_unsafe_archive(
    tmp_path: Path, source: Path, name: str
) -> None:
    path = tmp_path / f"evil{source.suffix}"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr(zipfile.ZipInfo(name), b"owned")
    assert reason_of(path) == "unsafe_archive"
    assert not Path("/evil").exists() and not (tmp_path.parent / "evil").exists()


def _rewrite(source: Path, path: Path, member: str, transform: object) -> None:
    assert callable(transform)
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info)
            out.writestr(info, transform(data) if info.filename == member else data)


def test_docx_with_entity_declarations_is_corrupt(tmp_path: Path) -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
    )
    path = tmp_path / "laughs.docx"

    def inject(data: bytes) -> bytes:
        return laughs + data[data.index(b"?>") + 2 :].replace(b"<w:t ", b"<w:t a='&lol2;' ", 1)

    _rewrite(DOCX, path, "word/document.xml", inject)
    assert reason_of(path) == "corrupt"


def test_docx_with_malformed_xml_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "malformed.docx"
    _rewrite(DOCX, path, "word/document.xml", lambda data: data[: len(data) // 2])
    assert reason_of(path) == "corrupt"


def test_epub_without_container_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "nocontainer.epub"
    with zipfile.ZipFile(EPUB) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename != "META-INF/container.xml":
                out.writestr(info, src.read(info))
    assert reason_of(path) == "corrupt"


def test_epub_spine_pointing_outside_the_book_is_unsafe_archive(tmp_path: Path) -> None:
    path = tmp_path / "escape.epub"
    _rewrite(
        EPUB,
        path,
        "EPUB/content.opf",
        lambda data: data.replace(b'href="text/ch002.xhtml"', b'href="../../../etc/passwd"'),
    )
    assert reason_of(path) == "unsafe_archive"


def test_password_protected_docx_is_encrypted(tmp_path: Path) -> None:
    # Word saves a protected .docx as an OLE compound file holding an EncryptionInfo stream.
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504
    entry = "EncryptionInfo".encode("utf-16-le").ljust(64, b"\0")
    path = tmp_path / "locked.docx"
    path.write_bytes(header + entry + bytes(range(256)) * 16)
    assert reason_of(path) == "encrypted"


# --- anything at all ----------------------------------------------------------------------------


_SEEDS = {
    ".pdf": EN_PDF.read_bytes()[:60_000],
    ".docx": DOCX.read_bytes(),
    ".epub": EPUB.read_bytes(),
    ".html": (DOCS / "python-faq/gui.html").read_bytes(),
    ".md": (DOCS / "nodejs-md/readline.md").read_bytes()[:20_000],
    ".txt": ZH_TXT.read_bytes()[:20_000],
}


@settings(
    max_examples=60,
    deadline=None,
    database=None,  # write nothing outside tmp_path
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    suffix=st.sampled_from(sorted(_SEEDS)),
    edits=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=8)), max_size=6),
    cut=st.floats(0.05, 1.0),
)
def test_damaged_documents_raise_only_parse_error(
    tmp_path: Path, suffix: str, edits: list[tuple[float, bytes]], cut: float
) -> None:
    data = bytearray(_SEEDS[suffix][: max(1, int(len(_SEEDS[suffix]) * cut))])
    for where, junk in edits:
        at = int(where * (len(data) - 1))
        data[at : at + len(junk)] = junk
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(bytes(data))
    try:
        doc = parse_file(path)
    except ParseError as exc:
        assert exc.reason in {
            "unsupported_type",
            "empty_file",
            "too_large",
            "corrupt",
            "encrypted",
            "no_text_layer",
            "invalid_encoding",
            "archive_too_large",
            "unsafe_archive",
            "no_text",
        }
    else:
        assert doc.sections


def test_parse_file_runs_in_a_worker_process_and_its_errors_come_back(tmp_path: Path) -> None:
    bad = tmp_path / "random.pdf"
    bad.write_bytes(random.Random(3).randbytes(10_000))
    good = DOCS / "nodejs-md/dns.md"

    async def run() -> tuple[ParsedDocument, ParseError]:
        doc = await anyio.to_process.run_sync(parse_file, good)
        try:
            await anyio.to_process.run_sync(parse_file, bad)
        except ParseError as exc:
            return doc, exc
        raise AssertionError("a random .pdf parsed")

    doc, error = anyio.run(run)
    assert doc == parse_file(good)
    again = pickle.loads(pickle.dumps(error))
    assert (again.reason, again.message) == (error.reason, error.message)
    assert (error.reason, error.message) == ("corrupt", reason_message(bad))


def reason_message(path: Path) -> str:
    with pytest.raises(ParseError) as info:
        parse_file(path)
    return info.value.message


def test_web_page_with_bad_utf8_bytes_says_how_many_were_replaced(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(
        b'<html><head><meta charset="utf-8"><title>T</title></head><body>\n<article><h1>Head'
        b"</h1><p>Caf\xe9 au lait, and the rest of this paragraph is ordinary text.</p>"
        b"</article></body></html>"
    )
    doc = parse_file(path)
    assert "Caf\ufffd au lait" in doc.sections[0].paragraphs[1].text
    [warning] = doc.warnings
    assert warning.code == "replaced_bytes"
    assert warning.message.startswith("1 byte that is not valid UTF-8 was replaced")
    assert "(line 2)" in warning.message
