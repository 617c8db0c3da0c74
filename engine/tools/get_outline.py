"""get_outline: the section structure of one or more documents, in the order they were asked for.

Structure only: paths, positions, block and token counts, first sentences. It never returns
block ids or body text, and an unknown doc_id fails the whole call (no partial outline).
"""

from __future__ import annotations

from engine.tools.contracts import (
    TOOL_CONTRACT_VERSION,
    ErrorResult,
    GetOutlineArgs,
    GetOutlineResult,
    OutlineDocument,
    OutlineSection,
)
from engine.tools.scope import resolve_documents
from index.snapshot import Snapshot


def get_outline(snapshot: Snapshot, args: GetOutlineArgs) -> GetOutlineResult | ErrorResult:
    docs = resolve_documents(snapshot, args.doc_ids)
    if isinstance(docs, ErrorResult):
        return docs
    assert docs is not None  # doc_ids is required, so never "all documents"
    documents = []
    for ordinal in docs:  # first-occurrence order of the request, duplicates already dropped
        info = snapshot.documents[ordinal]
        documents.append(
            OutlineDocument(
                doc_id=info.doc_id,
                title=info.title,
                source_label=info.source_label,
                sections=tuple(
                    OutlineSection(
                        path=s.path,
                        ordinal=s.ordinal,
                        depth=s.depth,
                        direct_blocks=s.direct_blocks,
                        subtree_blocks=s.subtree_blocks,
                        direct_tokens=s.direct_tokens,
                        subtree_tokens=s.subtree_tokens,
                        first_sentence=s.first_sentence,
                    )
                    for s in info.sections
                ),
            )
        )
    return GetOutlineResult(
        documents=tuple(documents), token_estimate=0, contract_version=TOOL_CONTRACT_VERSION
    )
