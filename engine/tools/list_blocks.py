"""list_blocks: every block of one document, or of some of its sections, in block_index order.

A section path includes all its subsections; several paths give their union, each block once.
It never truncates and never returns part of a scope: one missing path fails the whole call.
"""

from __future__ import annotations

from msgspec import UnsetType

from engine.tools.contracts import (
    TOOL_CONTRACT_VERSION,
    BlocksResult,
    ErrorResult,
    ListBlocksArgs,
)
from engine.tools.scope import block_item, resolve_documents, resolve_sections
from index.snapshot import Snapshot


def list_blocks(snapshot: Snapshot, args: ListBlocksArgs) -> BlocksResult | ErrorResult:
    docs = resolve_documents(snapshot, [args.doc_id])
    if isinstance(docs, ErrorResult):
        return docs
    assert docs is not None
    info = snapshot.documents[docs[0]]
    paths = [] if isinstance(args.section_paths, UnsetType) else args.section_paths
    if paths:
        sections = resolve_sections(info, paths)
        if isinstance(sections, ErrorResult):
            return sections
        wanted = set(sections)
        start = info.block_start
        of_block = snapshot.block_sections(start, start + info.block_count)
        # One pass over the document's blocks: block_index order, no block twice.
        ordinals = [start + i for i, s in enumerate(of_block.tolist()) if s in wanted]
    else:
        ordinals = list(info.block_range)
    blocks = tuple(block_item(snapshot, o) for o in ordinals)
    return BlocksResult(
        blocks=blocks,
        total=len(blocks),
        empty_reason=None if blocks else "scope_empty",
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )
