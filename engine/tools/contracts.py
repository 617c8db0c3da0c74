"""The five read-only tools' contracts: names, argument Structs, result Structs, error codes,
what the trace keeps beside a result, and the one way to read a result back.

The argument Structs are the single definition behind both validation (executor) and the JSON
schema shown to the model (describe); every constraint lives in their annotations, never in
tool code. Result field names are fixed by SPEC §15 and may only be appended to, never renamed.
Whoever reads a result (harness, citations, injection scan, trace, evaluation) reads these
Structs through `decode_result` / `read_result` and the accessors below, never its own parser.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias, get_args

import msgspec
from msgspec import UNSET, Meta, UnsetType

from engine.tools.retrieval import SearchTrace
from index.records import EmbeddingSpec

# Bump when an argument or a result changes meaning; recorded in every result and run manifest.
TOOL_CONTRACT_VERSION = 1

# The one list of the tools, in the order they are described to the model; the harness's
# whitelist, the executor and the descriptions all take it from here.
ToolName = Literal["list_documents", "get_outline", "search_blocks", "list_blocks", "scan_term"]
TOOL_NAMES: tuple[ToolName, ...] = get_args(ToolName)

EmptyReason = Literal["no_match", "scope_empty", "collection_empty"]
ToolErrorCode = Literal[
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

# JSON Schema's "pattern" searches like re.search, as msgspec does: "\S" = not blank. Every
# text argument is non-blank; the executor words the failure as "`field` must not be blank".
NonBlank: TypeAlias = Annotated[str, Meta(pattern=r"\S")]
DocId: TypeAlias = Annotated[
    str, Meta(pattern=r"\S", description="a doc_id as returned by list_documents")
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
            list[NonBlank],
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
    code: ToolErrorCode
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


def tool_error(code: ToolErrorCode, message: str, *, retryable: bool = False) -> ErrorResult:
    """An error payload; its token estimate is filled in by the executor."""
    return ErrorResult(
        error=ToolError(code=code, message=message, retryable=retryable),
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )


_RESULT_DECODERS = {name: msgspec.json.Decoder(kind) for name, kind in RESULTS.items()}
_ERROR_DECODER = msgspec.json.Decoder(ErrorResult)


def decode_result(name: ToolName, raw: bytes | str) -> ToolResult:
    """Read back a result JSON: the tool's result or an ErrorResult. Raises msgspec.DecodeError
    (or its ValidationError) when `raw` is neither."""
    try:
        return _RESULT_DECODERS[name].decode(raw)
    except msgspec.ValidationError as not_a_result:
        # Every result has required fields an error payload lacks, so this is unambiguous.
        try:
            return _ERROR_DECODER.decode(raw)
        except msgspec.ValidationError:
            raise not_a_result from None


def read_result(name: str, raw: bytes | None) -> ToolResult | None:
    """`decode_result` for readers that must never fail (trace, evaluation, a UI replaying
    events): None when `name` is not a tool or `raw` is missing or not one of its results."""
    if raw is None or name not in RESULTS:
        return None
    try:
        return decode_result(name, raw)
    except msgspec.DecodeError:
        return None


# -- reading a result ---------------------------------------------------------------------------

ReturnedItem: TypeAlias = BlockItem | ScanHit


def error_of(result: ToolResult) -> ToolError | None:
    """The failure a result reports, None for a result (empty or not)."""
    return result.error if isinstance(result, ErrorResult) else None


def empty_reason_of(result: ToolResult) -> EmptyReason | None:
    """Why a legal result is empty; None when it is not empty, has no reason, or is an error."""
    return None if isinstance(result, ErrorResult | GetOutlineResult) else result.empty_reason


def outcome_of(result: ToolResult) -> str:
    """One word for the trace: the error code, else the empty_reason, else "ok"."""
    error = error_of(result)
    return error.code if error is not None else empty_reason_of(result) or "ok"


def returned_items(result: ToolResult) -> tuple[ReturnedItem, ...]:
    """The blocks (search_blocks, list_blocks) or scan hits (scan_term) a result returns, in
    its order; () for every other result. Only these carry citation ids."""
    if isinstance(result, BlocksResult):
        return result.blocks
    if isinstance(result, ScanTermResult):
        return result.hits
    return ()


def cited_refs(result: ToolResult) -> list[tuple[str, str]]:
    """(doc_id, block_id) of every block whose FULL text a result hands the model
    (search_blocks, list_blocks): what an answer may cite as evidence. A block is "seen"
    only this way; a scan_term hit shows a snippet of a block, which locates it but is not
    evidence (see `located_refs`)."""
    if not isinstance(result, BlocksResult):
        return []
    return [(item.doc_id, item.block_id) for item in result.blocks]


def located_refs(result: ToolResult) -> list[tuple[str, str]]:
    """(doc_id, block_id) of every block a result only locates: scan_term hits, whose snippet
    is a few dozen characters of the block, not its text. A citation of such a block is
    "located, not read"."""
    if not isinstance(result, ScanTermResult):
        return []
    return [(hit.doc_id, hit.block_id) for hit in result.hits]


def returned_citations(result: ToolResult) -> list[str]:
    """The citation ids ("doc_id#block_id") a result returns, in order."""
    return [item.citation for item in returned_items(result)]


def shown_text(item: ReturnedItem) -> str:
    """The document text the model reads for an item: a block's full text or a hit's snippet."""
    return item.text if isinstance(item, BlockItem) else item.snippet


# -- what the trace keeps beside a result --------------------------------------------------------


class ToolInternals(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a tool call leaves for the trace and the harness but never for the model: search
    ranks and scores, embedding usage or failure, a crash. Fields that do not apply stay unset
    and are left out of the trace artifact, whose JSON keeps this field order."""

    search: SearchTrace | None = None  # search_blocks' ranking, per list
    embedding_tokens: int | None = None  # the embedding vendor's count, never chat tokens
    embedding_error: str | None = None  # the query could not be embedded: EmbeddingError.code
    # Seconds the vendor asked to wait (None: it named none); unset unless embedding failed.
    retry_after: float | UnsetType | None = UNSET
    # A model mismatch: what the snapshot was built with (None: no model) and what is
    # configured; unset unless they differ.
    snapshot_embedding: EmbeddingSpec | UnsetType | None = UNSET
    provider_embedding: EmbeddingSpec | UnsetType = UNSET
    exception: str | None = None  # a bug inside the tool: the exception's type …
    detail: str | None = None  # … and its message
