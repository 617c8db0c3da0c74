"""Safe reading of the ZIP containers behind DOCX and EPUB, and of the XML inside them.

Checks names (no absolute paths, no ".."), declared sizes and compression ratios (zip bombs)
from the central directory before inflating anything; reads members into memory by name with
a size cap and never extracts to disk; parses XML without DTDs or entities.
"""

from __future__ import annotations

import re
import unicodedata
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET
from xml.parsers import expat

from engine.errors import ParseError
from engine.parsing.limits import MIB, ParseLimits

_CHUNK = 1 * MIB
_DRIVE = re.compile(r"^[A-Za-z]:")


def _unsafe_name(name: str) -> bool:
    if name.startswith(("/", "\\")) or _DRIVE.match(name) or "\x00" in name:
        return True
    return any(part == ".." for part in re.split(r"[/\\]", name))


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _utf8_spelling(info: zipfile.ZipInfo) -> str | None:
    """The member's name read as UTF-8 when zipfile read it as cp437 and its bytes are valid
    UTF-8 (and not plain ASCII, where both spellings agree); else None."""
    if info.flag_bits & 0x800:
        return None
    try:
        raw = info.filename.encode("cp437")
        utf8 = raw.decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None
    return utf8 if utf8 != info.filename else None


class SafeArchive:
    """A checked ZIP archive; `kind` names the document type in messages ("Word document")."""

    def __init__(self, path: Path, limits: ParseLimits, kind: str) -> None:
        self._kind = kind
        self._limits = limits
        try:
            self._zip = zipfile.ZipFile(path)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
            raise ParseError(
                "corrupt",
                f"This {kind} is damaged or is not really a {kind} (it is not a valid ZIP "
                "container); open and save it again in the program that made it.",
            ) from exc
        self._check(infos)
        self._infos = {info.filename: info for info in infos}
        # A name without the UTF-8 flag is decoded as cp437 by zipfile, but many tools write
        # UTF-8 without setting the flag: such a member is found by its UTF-8 spelling too.
        self._aliases = {
            utf8: info.filename
            for info in infos
            if (utf8 := _utf8_spelling(info)) is not None and utf8 not in self._infos
        }
        self._folded = {_folded(name): name for name in self._infos}
        for alias, stored in self._aliases.items():
            self._folded.setdefault(_folded(alias), stored)
        self._inflated = 0

    def _check(self, infos: list[zipfile.ZipInfo]) -> None:
        limits, kind = self._limits, self._kind
        if len(infos) > limits.max_archive_entries:
            raise ParseError(
                "archive_too_large",
                f"This {kind} contains more than {limits.max_archive_entries:,} parts, far "
                "more than a real document has; Citewise will not open it.",
            )
        total = 0
        for info in infos:
            if _unsafe_name(info.filename):
                raise ParseError(
                    "unsafe_archive",
                    f"This {kind} contains a part named {info.filename!r} that points outside "
                    "the document, which real documents never do; Citewise will not open it.",
                )
            total += info.file_size
            big = info.file_size > limits.ratio_floor_bytes
            ratio = info.file_size / max(1, info.compress_size)
            if big and ratio > limits.max_compression_ratio:
                raise ParseError(
                    "archive_too_large",
                    f"This {kind} contains a part that would unpack to "
                    f"{info.file_size / MIB:,.0f} MB from {info.compress_size / MIB:,.1f} MB "
                    "(a 'zip bomb'); Citewise will not open it.",
                )
        if total > limits.max_archive_bytes:
            raise ParseError(
                "archive_too_large",
                f"This {kind} would unpack to {total / MIB:,.0f} MB, more than the "
                f"{limits.max_archive_bytes / MIB:,.0f} MB limit (ingest.max_archive_megabytes); "
                "Citewise will not open it.",
            )

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> SafeArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def find(self, name: str) -> str | None:
        """The stored member name for `name` (exact, else ignoring case and Unicode
        composition: a book may name "ü" decomposed where its file name is composed), or
        None."""
        if name in self._infos:
            return name
        if name in self._aliases:
            return self._aliases[name]
        return self._folded.get(_folded(name))

    def read(self, name: str) -> bytes:
        """A member's bytes, never more than it declares nor than the archive budget."""
        stored = self.find(name)
        if stored is None:
            raise ParseError(
                "corrupt",
                f"This {self._kind} is missing its part {name!r}; open and save it again in "
                "the program that made it.",
            )
        info = self._infos[stored]
        if info.flag_bits & 0x1:
            raise ParseError(
                "encrypted",
                f"This {self._kind} is password-protected; remove the password in the program "
                "that made it and import it again.",
            )
        budget = min(info.file_size, self._limits.max_archive_bytes - self._inflated)
        out = bytearray()
        try:
            with self._zip.open(info) as member:
                while True:
                    chunk = member.read(min(_CHUNK, budget - len(out) + 1))
                    if not chunk:
                        break
                    out += chunk
                    if len(out) > budget:
                        raise ParseError(
                            "archive_too_large",
                            f"This {self._kind} unpacks to more than its parts declare or "
                            "than the size limit allows; Citewise will not open it.",
                        )
        except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, ValueError) as exc:
            raise ParseError(
                "corrupt",
                f"This {self._kind} is damaged (part {name!r} cannot be unpacked); open and "
                "save it again in the program that made it.",
            ) from exc
        self._inflated += len(out)
        return bytes(out)

    def read_xml(self, name: str) -> ET.Element:
        return parse_xml(self.read(name), f"{self._kind} part {name!r}")


def _qname(name: str) -> str:
    # expat reports "uri}local" with namespace_separator "}"; ElementTree spells "{uri}local".
    return "{" + name if "}" in name else name


def parse_xml(data: bytes, what: str) -> ET.Element:
    """Parse XML into an ElementTree element, refusing any DTD or entity declaration."""
    if b"<!ENTITY" in data or b"<!DOCTYPE" in data:
        raise _declaration_error(what)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True

    def start(name: str, attrs: dict[str, str]) -> None:
        builder.start(_qname(name), {_qname(k): v for k, v in attrs.items()})

    def end(name: str) -> None:
        builder.end(_qname(name))

    parser.StartElementHandler = start
    parser.EndElementHandler = end

    def refuse(*_: object) -> None:
        # expat passes an exception raised in a handler through Parse() unchanged.
        raise _declaration_error(what)

    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
        return builder.close()
    except (expat.ExpatError, ValueError, AssertionError) as exc:
        raise ParseError(
            "corrupt",
            f"The {what} is not well-formed XML; open and save the document again in the "
            "program that made it.",
        ) from exc


def _declaration_error(what: str) -> ParseError:
    return ParseError(
        "corrupt",
        f"The {what} declares a DTD or entities, which real documents of this kind never do; "
        "Citewise will not open it.",
    )
