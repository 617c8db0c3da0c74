"""Writes the generated files of the regression corpus (the text encodings, and an EPUB whose
chapter name is UTF-8 without the zip UTF-8 flag). Run from the repository root:
    python tests/realworld/generate.py
The files are committed; this only documents how they were made.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

ENGLISH = (
    "Plain text travels well.\n\n"
    "A text file names no encoding, so the reader has to work it out from the bytes: a\n"
    "byte order mark, a decoding that succeeds, or text that reads as a language.\n"
)
FRENCH = (
    "# Notes de lecture\n\n"
    "Le café crème du matin, déjà froid, attendait à côté du cahier.\n\n"
    "Une façade naïve, un garçon à l'été : the rest of this file is plain ASCII,\n"
    "as most Markdown written on Windows in Western Europe is.\n"
)
CHINESE = (
    "第一章 编码\n\n"
    "纯文本文件不写明自己的编码，读者只能从字节里推断：字节顺序标记、能成功的解码，"
    "或读起来像一种语言的文字。\n"
)


def _clear_utf8_flags(path: Path) -> None:
    """Clear general-purpose bit 11 in every header, as many zip tools write UTF-8 names."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = data.find(signature)
        while i >= 0:
            (flags,) = struct.unpack_from("<H", data, i + offset)
            struct.pack_into("<H", data, i + offset, flags & ~0x800)
            i = data.find(signature, i + 4)
    path.write_bytes(bytes(data))


def _epub_with_utf8_name(path: Path) -> None:
    chapter = "第一章.xhtml"
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    opf = (
        '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" '
        'version="3.0" unique-identifier="id"><metadata '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:x</dc:identifier>'
        "<dc:title>编码小书</dc:title><dc:language>zh</dc:language></metadata><manifest>"
        f'<item id="c1" href="{chapter}" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/></spine></package>'
    )
    body = CHINESE.split("\n\n")[1].strip()
    xhtml = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>第一章</title></head><body><h1>第一章 编码</h1><p>{body}</p></body></html>"
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        zf.writestr("META-INF/container.xml", container, zipfile.ZIP_DEFLATED)
        zf.writestr("OEBPS/content.opf", opf, zipfile.ZIP_DEFLATED)
        zf.writestr(f"OEBPS/{chapter}", xhtml, zipfile.ZIP_DEFLATED)
    _clear_utf8_flags(path)


def main() -> None:
    text = HERE / "text"
    text.mkdir(exist_ok=True)
    (text / "utf8-bom.md").write_bytes(b"\xef\xbb\xbf" + FRENCH.encode("utf-8"))
    (text / "utf16-le-bom.txt").write_bytes(b"\xff\xfe" + ENGLISH.encode("utf-16-le"))
    (text / "utf16-be-no-bom.txt").write_bytes(ENGLISH.encode("utf-16-be"))
    (text / "gb18030.txt").write_bytes(CHINESE.encode("gb18030"))
    (text / "latin1.md").write_bytes(FRENCH.encode("latin-1"))
    (text / "cp1252-quotes.txt").write_bytes(
        "“Smart quotes” – and a dash – from a Windows editor.\n".encode("cp1252")
    )
    damaged = bytearray(CHINESE.encode("utf-8"))
    cut = damaged.index("推断".encode())
    del damaged[cut + 1]  # one byte lost in the middle of 推
    (text / "utf8-damaged.txt").write_bytes(bytes(damaged))
    (text / "cyrillic-cp1251.txt").write_bytes("Привет, это русский текст.\n".encode("cp1251"))
    _epub_with_utf8_name(HERE / "epub" / "generated-utf8-chapter-name-without-flag.epub")


if __name__ == "__main__":
    main()
