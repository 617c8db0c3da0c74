"""The five read-only tools' contracts: argument Structs, result Structs, error codes, version.

The argument Structs are the single definition behind both validation (executor) and the JSON
schema shown to the model (describe); every constraint lives in their annotations, never in
tool code. Result field names are fixed by SPEC §15 and may only be appended to, never renamed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, Meta, UnsetType

# Bump when an argument or a result changes meaning; recorded in every result and run manifest.
TOOL_CONTRACT_VERSION = 1

ToolName = Literal["list_documents", "get_outline", "search_blocks", "list_blocks", "scan_term"]
TOOL_NAMES: tuple[ToolName, ...] = (
    "list_documents",
    "get_outline",
    "search_blocks",
    "list_blocks",
    "scan_term",
)

EmptyReason = Literal["no_match", "scope_empty", "collection_empty"]
ErrorCode = Literal[
    "invalid_argument",
    "scope_not_found",
    "collection_unavailable",
    "upstream_unavailable",
    "tool_internal_error",
]


class UnknownTool(LookupError):
    """A tool name that is not one of the five; the harness's whitelist should never let one in."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")
        self.name = name


# -- arguments ---------------------------------------------------------------------------------

# JSON Schema's "pattern" searches like re.search, as msgspec does: "\S" = not blank.
NonBlank: TypeAlias = Annotated[str, Meta(pattern=r"\S")]
DocId: TypeAlias = Annotated[
    str, Meta(min_length=1, description="a doc_id as returned by list_documents")
]
DocIds: TypeAlias = Annotated[
    list[DocId],
    Meta(
        min_length=1,
        description="restrict to these documents (at least one); omit the field for all documents",
    ),
]


class ListDocumentsArgs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Find documents by metadata (source name or alias, language, words of the title)."""

    source: (
        Annotated[
            str,
            Meta(
                pattern=r"\S",
                description=(
                    "a source name or alias, whole and case-insensitive; a trailing part of the"
                    ' path counts ("events.md" finds "nodejs-md/events.md")'
                ),
            ),
        ]
        | UnsetType
    ) = UNSET
    lang: Annotated[str, Meta(pattern=r"\S", description='language code, e.g. "en" or "zh"')] | (
        UnsetType
    ) = UNSET
    title_contains: (
        Annotated[
            str,
            Meta(pattern=r"\S", description="text the title contains (case-insensitive)"),
        ]
        | UnsetType
    ) = UNSET


class GetOutlineArgs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The section outline of one or more documents."""

    doc_ids: Annotated[
        list[DocId],
        Meta(min_length=1, description="the documents, at least one; duplicates are ignored"),
    ]


class SearchBlocksArgs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Hybrid keyword + semantic search; returns the best few blocks."""

    query: Annotated[str, Meta(pattern=r"\S", description="what to look for, in any language")]
    doc_ids: DocIds | UnsetType = UNSET


class ListBlocksArgs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every block of one document, or of some of its sections."""

    doc_id: DocId
    section_paths: (
        Annotated[
            list[Annotated[str, Meta(min_length=1)]],
            Meta(
                description=(
                    "section paths exactly as get_outline prints them; each includes its"
                    " subsections; omit or [] for the whole document"
                )
            ),
        ]
        | UnsetType
    ) = UNSET


class ScanTermArgs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every occurrence of an exact string (case-insensitive), in document order."""

    term: Annotated[
        str,
        Meta(
            pattern=r"\S",
            description="the exact string; only surrounding whitespace and letter case are ignored",
        ),
    ]
    doc_ids: DocIds | UnsetType = UNSET


ToolArguments: TypeAlias = (
    ListDocumentsArgs | GetOutlineArgs | SearchBlocksArgs | ListBlocksArgs | ScanTermArgs
)

ARGUMENTS: dict[ToolName, type[ToolArguments]] = {
    "list_documents": ListDocumentsArgs,
    "get_outline": GetOutlineArgs,
    "search_blocks": SearchBlocksArgs,
    "list_blocks": ListBlocksArgs,
    "scan_term": ScanTermArgs,
}


# -- results -----------------------------------------------------------------------------------
# Every result ends with token_estimate (DeepSeek tokens of this very JSON) and
# contract_version. omit_defaults keeps empty_reason out of the JSON when it is None; the
# options are repeated on every class because type checkers do not inherit them.


class DocumentSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    doc_id: str
    title: str
    source_label: str
    aliases: tuple[str, ...]
    lang: str
    sections: int
    blocks: int


class ListDocumentsResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    documents: tuple[DocumentSummary, ...]
    total: int
    empty_reason: EmptyReason | None = None
    token_estimate: int
    contract_version: int


class OutlineSection(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    path: str
    ordinal: int
    depth: int
    direct_blocks: int
    subtree_blocks: int
    direct_tokens: int
    subtree_tokens: int
    first_sentence: str


class OutlineDocument(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    doc_id: str
    title: str
    source_label: str
    sections: tuple[OutlineSection, ...]


class GetOutlineResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    documents: tuple[OutlineDocument, ...]
    token_estimate: int
    contract_version: int


class BlockItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    citation: str  # doc_id#block_id
    doc_id: str
    block_id: str
    title: str  # the document's title
    source_label: str
    section: str  # the section path
    page_start: int | None
    page_end: int | None
    text: str


class BlocksResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """search_blocks and list_blocks."""

    blocks: tuple[BlockItem, ...]
    total: int
    empty_reason: EmptyReason | None = None
    token_estimate: int
    contract_version: int


class ScanHit(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    citation: str
    doc_id: str
    block_id: str
    title: str
    source_label: str
    section: str
    snippet: str
    count: int


class ScanTermResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    hits: tuple[ScanHit, ...]
    count: int  # occurrences over all hits
    empty_reason: EmptyReason | None = None
    token_estimate: int
    contract_version: int


class ToolError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    code: ErrorCode
    message: str  # what went wrong and what to do next, for the model
    retryable: bool


class ErrorResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    error: ToolError
    token_estimate: int
    contract_version: int


ToolResult: TypeAlias = (
    ListDocumentsResult | GetOutlineResult | BlocksResult | ScanTermResult | ErrorResult
)

RESULTS: dict[ToolName, type[ToolResult]] = {
    "list_documents": ListDocumentsResult,
    "get_outline": GetOutlineResult,
    "search_blocks": BlocksResult,
    "list_blocks": BlocksResult,
    "scan_term": ScanTermResult,
}


def tool_error(code: ErrorCode, message: str, *, retryable: bool = False) -> ErrorResult:
    """An error payload; its token estimate is filled in by the executor."""
    return ErrorResult(
        error=ToolError(code=code, message=message, retryable=retryable),
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )


def decode_result(name: ToolName, raw: bytes | str) -> ToolResult:
    """Read back a result JSON (traces, retrieval replay): the tool's result or an ErrorResult."""
    data: Any = msgspec.json.decode(raw)
    kind: type[ToolResult] = (
        ErrorResult if isinstance(data, dict) and "error" in data else RESULTS[name]
    )
    return msgspec.convert(data, kind)
