"""Turning what the model names (doc_ids, section paths) into snapshot ordinals, and blocks into
the payload items the tools return.

A scope is all or nothing: one unknown id or path fails the whole call with scope_not_found and
a message listing exactly what was not found. Nothing here ranks, filters or truncates blocks.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from msgspec import UnsetType

from engine.tools.contracts import BlockItem, ErrorResult, tool_error
from index.blockstore import DocumentInfo
from index.records import SectionRecord
from index.snapshot import Snapshot

_LISTED = 10  # unknown ids or paths named in a message; the rest are counted
# engine.parsing.model.PATH_SEPARATOR, repeated so that the tools do not import the parsers.
_PATH_SEPARATOR = " / "


def _named(values: Sequence[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:_LISTED])
    return shown + (f" and {len(values) - _LISTED} more" if len(values) > _LISTED else "")


def resolve_documents(
    snapshot: Snapshot, doc_ids: Sequence[str] | UnsetType
) -> list[int] | ErrorResult | None:
    """Document ordinals of `doc_ids` (first occurrence order, duplicates dropped), None for
    "every document" when the field was omitted, or scope_not_found naming every unknown id."""
    if isinstance(doc_ids, UnsetType):
        return None
    ordinals: list[int] = []
    unknown: list[str] = []
    for doc_id in dict.fromkeys(doc_ids):
        ordinal = snapshot.doc_ordinal(doc_id)
        if ordinal is None:
            unknown.append(doc_id)
        else:
            ordinals.append(ordinal)
    if unknown:
        return tool_error(
            "scope_not_found",
            f"no document with doc_id {_named(unknown)} in this snapshot; nothing was read. "
            "Use list_documents to find valid doc_ids.",
        )
    return ordinals


def block_count(snapshot: Snapshot, docs: Iterable[int] | None) -> int:
    documents = snapshot.documents
    if docs is None:
        return snapshot.n_blocks
    return sum(documents[d].block_count for d in docs)


def subtree_end(sections: Sequence[SectionRecord], ordinal: int) -> int:
    """One past the last descendant of section `ordinal` (descendants follow it contiguously)."""
    depth = sections[ordinal].depth
    end = ordinal + 1
    while end < len(sections) and sections[end].depth > depth:
        end += 1
    return end


def resolve_sections(info: DocumentInfo, paths: Sequence[str]) -> list[int] | ErrorResult:
    """Sorted ordinals of the sections named by `paths` and all their descendants, or
    scope_not_found naming every path that is not in the outline."""
    by_path = {section.path: section.ordinal for section in info.sections}
    chosen: set[int] = set()
    missing: list[str] = []
    for path in dict.fromkeys(paths):
        ordinal = by_path.get(path)
        if ordinal is None:
            ordinal = by_path.get(unicodedata.normalize("NFC", path.strip()))
        if ordinal is None:
            missing.append(path)
            continue
        chosen.update(range(ordinal, subtree_end(info.sections, ordinal)))
    if missing:
        return tool_error(
            "scope_not_found",
            f"document {info.doc_id} has no section path {_named(missing)}; nothing was read. "
            + _suggestions(info, missing)
            + "Paths must be copied whole from get_outline.",
        )
    return sorted(chosen)


def _suggestions(info: DocumentInfo, missing: Sequence[str]) -> str:
    """Full paths whose last component is exactly a missing path (a common slip)."""
    hints: list[str] = []
    for path in missing[:_LISTED]:
        matches = [
            s.path for s in info.sections if s.path.rsplit(_PATH_SEPARATOR, 1)[-1] == path.strip()
        ]
        if len(matches) == 1:
            hints.append(f"{path!r} may mean {matches[0]!r}")
    return ("; ".join(hints) + ". ") if hints else ""


def block_item(snapshot: Snapshot, ordinal: int) -> BlockItem:
    """The payload of one block: citation, document, section path, pages and full text."""
    block = snapshot.block(ordinal)
    info = snapshot.documents[block.doc]
    return BlockItem(
        citation=block.citation,
        doc_id=block.doc_id,
        block_id=block.block_id,
        title=info.title,
        source_label=info.source_label,
        section=info.sections[block.section].path,
        page_start=block.page_start,
        page_end=block.page_end,
        text=block.text,
    )
