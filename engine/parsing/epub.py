"""EPUB to sections: container.xml -> OPF -> spine order -> each XHTML document through the
same extraction as HTML, all feeding one section list.

Reads only the members the spine names, through SafeArchive (vetted names and sizes, no DTDs
in the package XML); a spine entry that points outside the book is refused.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree as ET

from engine.errors import ParseError
from engine.parsing.archive import SafeArchive
from engine.parsing.html import decode_html, feed_html, new_extractor, strip_site_suffix
from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import short_title
from engine.parsing.model import ParsedDocument, images_not_read

_KIND = "EPUB book"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/xml", "image/svg+xml"})
# Font obfuscation, not DRM: the text stays readable.
_FONT_OBFUSCATION = frozenset(
    {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
)


def _corrupt(what: str) -> ParseError:
    return ParseError(
        "corrupt",
        f"This EPUB book is damaged ({what}); open it in an e-book editor such as Calibre, "
        "save it again and import it again.",
    )


def _resolve(base_dir: str, href: str) -> str:
    target = unquote(href.split("#", 1)[0])
    if target.startswith("/") or "://" in target:
        raise _unsafe(href)
    path = posixpath.normpath(posixpath.join(base_dir, target))
    if path == ".." or path.startswith("../"):
        raise _unsafe(href)
    return path


def _unsafe(href: str) -> ParseError:
    return ParseError(
        "unsafe_archive",
        f"This EPUB book refers to {href!r}, outside the book itself, which real books never "
        "do; Citewise will not open it.",
    )


def _rootfile(zf: SafeArchive) -> str:
    container = zf.read_xml("META-INF/container.xml")
    for el in container.iter(f"{_CONTAINER}rootfile"):
        full_path = el.get("full-path")
        if full_path:
            return _resolve("", full_path)
    raise _corrupt("it does not say where its contents are")


def _encrypted_members(zf: SafeArchive) -> set[str]:
    name = "META-INF/encryption.xml"
    if zf.find(name) is None:
        return set()
    out: set[str] = set()
    for data in zf.read_xml(name).iter(f"{_ENC}EncryptedData"):
        method = data.find(f"{_ENC}EncryptionMethod")
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        ref = data.find(f"{_ENC}CipherData/{_ENC}CipherReference")
        if ref is not None and ref.get("URI"):
            out.add(_resolve("", ref.get("URI") or ""))
    return out


def _spine(opf: ET.Element, base_dir: str) -> list[str]:
    """The content documents of the reading order. A spine item that is no content document
    (a picture book's page image) is read through its manifest fallback chain, as a reading
    system without that kind of media reads it (EPUB 3, Core Media Types: fallbacks)."""
    manifest: dict[str, tuple[str, str, str, str]] = {}
    for item in opf.iter(f"{_OPF}item"):
        item_id, href = item.get("id"), item.get("href")
        if item_id and href:
            manifest[item_id] = (
                href,
                (item.get("media-type") or "").lower(),
                item.get("properties") or "",
                item.get("fallback") or "",
            )
    spine = opf.find(f"{_OPF}spine")
    if spine is None:
        raise _corrupt("it has no reading order")
    paths: list[str] = []
    for ref in spine.iter(f"{_OPF}itemref"):
        idref = ref.get("idref") or ""
        entry = manifest.get(idref)
        if entry is None:
            raise _corrupt(f"its reading order names a missing part {idref!r}")
        seen = {idref}
        while entry[1] not in _HTML_TYPES and entry[3] in manifest and entry[3] not in seen:
            seen.add(entry[3])
            entry = manifest[entry[3]]
        href, media_type, properties, _ = entry
        if media_type not in _HTML_TYPES or "nav" in properties.split():
            continue
        paths.append(_resolve(base_dir, href))
    return paths


def parse_epub(path: Path, limits: ParseLimits) -> ParsedDocument:
    extractor = new_extractor(limits, book=True)
    with SafeArchive(path, limits, _KIND) as zf:
        opf_path = _rootfile(zf)
        if zf.find(opf_path) is None:
            raise _corrupt(f"its package file {opf_path!r} is missing")
        opf = zf.read_xml(opf_path)
        title_el = opf.find(f".//{_DC_TITLE}")
        raw_title = short_title(title_el.text or "") if title_el is not None else ""
        meta_title = strip_site_suffix(raw_title, any_site=False)
        encrypted = _encrypted_members(zf)
        for member in _spine(opf, posixpath.dirname(opf_path)):
            if member in encrypted:
                raise ParseError(
                    "encrypted",
                    "This EPUB book is protected by DRM, so its text cannot be read; import a "
                    "DRM-free copy instead.",
                )
            if zf.find(member) is None:
                raise _corrupt(f"its chapter {member!r} is missing")
            data = zf.read(member)
            if b"<!ENTITY" in data:
                raise ParseError(
                    "corrupt",
                    f"The chapter {member!r} of this EPUB book declares entities, which real "
                    "books never do; Citewise will not open it.",
                )
            feed_html(extractor, decode_html(data))
    builder = extractor.builder
    title = meta_title or builder.first_heading or path.stem
    sections = builder.finish(title)
    return ParsedDocument(
        title=title,
        lang=detect_lang(builder.texts()),
        format="epub",
        sections=sections,
        warnings=images_not_read(extractor.images, "book"),
    )
