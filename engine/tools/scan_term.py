"""scan_term: every block in scope that contains an exact string, with a snippet and a count.

Matching is NFC + Unicode casefold of both sides and nothing else: no tokenising, stemming,
synonyms or punctuation folding. Every hit is returned, in document then block order; a count
of 0 proves only that this string does not occur in the scope.
"""

from __future__ import annotations

from engine.tools.contracts import (
    TOOL_CONTRACT_VERSION,
    EmptyReason,
    ErrorResult,
    ScanHit,
    ScanTermArgs,
    ScanTermResult,
)
from engine.tools.scope import block_count, resolve_documents
from index.snapshot import Snapshot

SNIPPET_WIDTH = 60  # characters of context around the first occurrence in a block


def scan_term(snapshot: Snapshot, args: ScanTermArgs) -> ScanTermResult | ErrorResult:
    docs = resolve_documents(snapshot, args.doc_ids)
    if isinstance(docs, ErrorResult):
        return docs
    term = args.term.strip()
    hits: list[ScanHit] = []
    for ordinal, count in snapshot.scan(term, docs):
        block = snapshot.block(ordinal)
        info = snapshot.documents[block.doc]
        hits.append(
            ScanHit(
                citation=block.citation,
                doc_id=block.doc_id,
                block_id=block.block_id,
                title=info.title,
                source_label=info.source_label,
                section=info.sections[block.section].path,
                snippet=snapshot.snippet(ordinal, term, SNIPPET_WIDTH),
                count=count,
            )
        )
    empty: EmptyReason | None = None
    if not hits:
        if docs is None and not snapshot.documents:
            empty = "collection_empty"
        elif block_count(snapshot, docs) == 0:
            empty = "scope_empty"
        else:
            empty = "no_match"
    return ScanTermResult(
        hits=tuple(hits),
        count=sum(h.count for h in hits),
        empty_reason=empty,
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )
