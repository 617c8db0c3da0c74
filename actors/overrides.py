"""A person's edits of document metadata — title, source label, aliases — per collection, and
one per-document import choice: recognise every scanned page (past the OCR page limit).

Kept in collections/<name>/overrides.json, keyed by source (a document's identity in its
collection), and applied to every document record that enters a snapshot, so an edit survives
re-importing the file. Text, blocks and vectors are never touched here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

# Still imported from here by actors/app.py.
from actors.errors import OverrideError as OverrideError
from engine.paths import DataDir
from index.fsutil import atomic_write
from index.records import DocumentRecord

OVERRIDES_FILE = "overrides.json"
OVERRIDES_FORMAT = 1
MAX_TITLE_CHARS = 300
MAX_ALIASES = 32
MAX_ALIAS_CHARS = 200


class DocumentOverride(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the person set; a field left None keeps what the document itself says."""

    title: str | None = None
    source_label: str | None = None
    aliases: tuple[str, ...] | None = None
    # Recognise every scanned page of this document, past ingest.ocr_max_pages: the one
    # setting kept here that is not metadata; the import reads it (ocr_all_sources), `apply`
    # leaves records alone.
    ocr_all_pages: bool | None = None

    def apply(self, record: DocumentRecord) -> DocumentRecord:
        changes: dict[str, object] = {}
        if self.title is not None and self.title != record.title:
            changes["title"] = self.title
        if self.source_label is not None and self.source_label != record.source_label:
            changes["source_label"] = self.source_label
        if self.aliases is not None and self.aliases != record.aliases:
            changes["aliases"] = self.aliases
        return msgspec.structs.replace(record, **changes) if changes else record


class _OverridesFile(msgspec.Struct, kw_only=True):
    format_version: int = OVERRIDES_FORMAT
    documents: dict[str, DocumentOverride] = {}


_decoder = msgspec.json.Decoder(_OverridesFile)


def clean_edit(
    *,
    title: str | None = None,
    source_label: str | None = None,
    aliases: Sequence[str] | None = None,
) -> DocumentOverride:
    """The edit as it will be kept: trimmed, aliases de-duplicated (case-insensitively, first
    spelling kept); an empty title or label, or an oversized value, is refused."""
    if title is not None:
        title = " ".join(title.split())
        if not title:
            raise OverrideError("the title is empty: type the title the document should have")
        if len(title) > MAX_TITLE_CHARS:
            raise OverrideError(f"the title is longer than {MAX_TITLE_CHARS} characters")
    if source_label is not None:
        source_label = source_label.strip()
        if not source_label:
            raise OverrideError("the source label is empty: type how the source should be named")
        if len(source_label) > MAX_TITLE_CHARS:
            raise OverrideError(f"the source label is longer than {MAX_TITLE_CHARS} characters")
    cleaned: tuple[str, ...] | None = None
    if aliases is not None:
        seen: dict[str, str] = {}
        for alias in aliases:
            alias = " ".join(alias.split())
            if len(alias) > MAX_ALIAS_CHARS:
                raise OverrideError(f"an alias is longer than {MAX_ALIAS_CHARS} characters")
            if alias:
                seen.setdefault(alias.casefold(), alias)
        if len(seen) > MAX_ALIASES:
            raise OverrideError(f"a document can have at most {MAX_ALIASES} aliases")
        cleaned = tuple(seen.values())
    return DocumentOverride(title=title, source_label=source_label, aliases=cleaned)


class Overrides:
    """The edits of one collection. Quick file operations; call from a thread."""

    def __init__(self, data: DataDir, collection: str) -> None:
        self.path = data.collection(collection) / OVERRIDES_FILE

    def load(self) -> dict[str, DocumentOverride]:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return {}
        try:
            stored = _decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise OverrideError(
                f"{self.path} is damaged ({exc}); fix or delete it (deleting it forgets the "
                "edited titles and aliases)"
            ) from None
        if stored.format_version > OVERRIDES_FORMAT:
            raise OverrideError(f"{self.path} is from a newer Citewise; upgrade first")
        return stored.documents

    def merged(self, source: str, edit: DocumentOverride) -> DocumentOverride:
        """The stored override of `source` with the fields `edit` sets replaced."""
        current = self.load().get(source, DocumentOverride())
        return DocumentOverride(
            title=edit.title if edit.title is not None else current.title,
            source_label=(
                edit.source_label if edit.source_label is not None else current.source_label
            ),
            aliases=edit.aliases if edit.aliases is not None else current.aliases,
            ocr_all_pages=(
                edit.ocr_all_pages if edit.ocr_all_pages is not None else current.ocr_all_pages
            ),
        )

    def save(self, source: str, override: DocumentOverride) -> None:
        documents = self.load()
        documents[source] = override
        self._write(documents)

    def forget(self, sources: Iterable[str]) -> None:
        documents, gone = self.load(), set(sources)
        kept = {s: o for s, o in documents.items() if s not in gone}
        if kept != documents:
            self._write(kept)

    def ocr_all_sources(self) -> frozenset[str]:
        """The documents whose every scanned page is to be recognised, whatever the limit."""
        return frozenset(s for s, o in self.load().items() if o.ocr_all_pages)

    def recognise_all_pages(self, sources: Iterable[str]) -> None:
        """Lift the OCR page limit for `sources` from their next import on."""
        documents = self.load()
        for source in sources:
            current = documents.get(source, DocumentOverride())
            documents[source] = msgspec.structs.replace(current, ocr_all_pages=True)
        self._write(documents)

    def apply(self, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
        """`records` with the person's edits applied (records without one are unchanged)."""
        documents = self.load()
        return [documents[r.source].apply(r) if r.source in documents else r for r in records]

    def _write(self, documents: dict[str, DocumentOverride]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = _OverridesFile(documents=dict(sorted(documents.items())))
        atomic_write(self.path, msgspec.json.format(msgspec.json.encode(body)))
