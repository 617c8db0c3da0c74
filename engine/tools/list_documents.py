"""list_documents: find documents by metadata — source name or alias, language, title words.

It reads only document metadata, never block text: zero results prove only that no metadata
matched. Matching is NFC + casefold; results are sorted by source label, title, doc_id.
"""

from __future__ import annotations

from msgspec import UnsetType

from engine.tools.contracts import (
    TOOL_CONTRACT_VERSION,
    DocumentSummary,
    EmptyReason,
    ListDocumentsArgs,
    ListDocumentsResult,
)
from index.blockstore import DocumentInfo
from index.snapshot import Snapshot
from index.textnorm import fold


def _path_form(name: str) -> str:
    """A source name as compared: folded, trimmed, Windows separators as "/", no "./" prefix."""
    form = fold(name.strip()).replace("\\", "/")
    while form.startswith("./"):
        form = form[2:]
    return form


def source_matches(info: DocumentInfo, wanted: str) -> bool:
    """`wanted` names the document: its source, source label or an alias, whole, ignoring case.

    A trailing run of whole path components also names it ("events.md" and
    "nodejs-md/events.md" both name "nodejs-md/events.md"; "ents.md" does not), because people
    and models name files without their folder; a name that fits several documents lists them
    all, which is what list_documents is for.
    """
    target = _path_form(wanted)
    if not target:
        return False
    for name in (info.source, info.source_label, *info.aliases):
        form = _path_form(name)
        if form == target or form.endswith("/" + target):
            return True
    return False


def _sort_key(info: DocumentInfo) -> tuple[str, str, str, str, str]:
    return (fold(info.source_label), info.source_label, fold(info.title), info.title, info.doc_id)


def list_documents(snapshot: Snapshot, args: ListDocumentsArgs) -> ListDocumentsResult:
    documents = snapshot.documents
    chosen = list(documents)
    if not isinstance(args.source, UnsetType):
        wanted = args.source
        chosen = [d for d in chosen if source_matches(d, wanted)]
    if not isinstance(args.lang, UnsetType):
        lang = fold(args.lang.strip())
        chosen = [d for d in chosen if fold(d.lang) == lang]
    if not isinstance(args.title_contains, UnsetType):
        words = fold(args.title_contains.strip())
        chosen = [d for d in chosen if words in fold(d.title)]
    chosen.sort(key=_sort_key)
    summaries = tuple(
        DocumentSummary(
            doc_id=d.doc_id,
            title=d.title,
            source_label=d.source_label,
            aliases=d.aliases,
            lang=d.lang,
            sections=len(d.sections),
            blocks=d.block_count,
        )
        for d in chosen
    )
    empty: EmptyReason | None = None
    if not summaries:
        empty = "collection_empty" if not documents else "no_match"
    return ListDocumentsResult(
        documents=summaries,
        total=len(summaries),
        empty_reason=empty,
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )
