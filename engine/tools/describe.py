"""Descriptions of the five tools for the system prompt's {tools}, as data and as text.

The argument schema shown to the model is generated from the very Struct the executor validates
against (contracts.ARGUMENTS), and the fields a result is said to return from the Struct it is
encoded from (contracts.RESULTS), so the model can never be told one thing and held to another.
The words say how each result is ordered, and what an empty result does and does not prove
(seed §10.1, appendix A.2); this module never describes behaviour the tools do not have.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec.inspect import CollectionType, StructType, Type, UnionType, type_info

from engine.tools.contracts import ARGUMENTS, RESULTS, TOOL_NAMES, ToolName


class ToolDescription(msgspec.Struct, frozen=True, kw_only=True):
    name: ToolName
    purpose: str
    arguments: dict[str, Any]  # JSON Schema of the arguments object
    returns: str
    empty_proves: str  # what an empty result (or count 0) establishes
    empty_does_not_prove: str


# Per tool: purpose, what to add after a returned field's shape (in the result's field order),
# a closing sentence for "Returns", what an empty result proves and what it does not.
_TEXT: dict[ToolName, tuple[str, dict[str, str], str, str, str]] = {
    "list_documents": (
        "Find which documents exist, by metadata only: source name or alias (whole name, case"
        " does not matter; a file name without its folder also matches), language, or words of"
        " the title (not the body). Use it to pin down the documents a question is about; if"
        " several could be meant and you cannot tell which, ask the user.",
        {"documents": " sorted by source, title, doc_id"},
        "",
        "no document's metadata matched the filters (empty_reason no_match), or the knowledge"
        " base has no documents at all (collection_empty).",
        "that no document discusses the subject: bodies are not searched.",
    ),
    "get_outline": (
        "The section structure of one or more documents, in the order you list them"
        " (duplicates are ignored): every section's path (unique, usable in list_blocks),"
        " position, depth, block and token counts of the section alone and with its"
        " subsections, and its first sentence. A document without headings has one root"
        " section. It returns structure, not facts, and no block ids.",
        {},
        "",
        "(never empty for valid doc_ids; an unknown doc_id fails the whole call with"
        " scope_not_found.)",
        "anything about the content: a first sentence is not the section.",
    ),
    "search_blocks": (
        "Hybrid search (keywords and meaning, in any language) over all documents or the"
        " doc_ids you list; returns the top {top_k} candidate blocks with their full text. The"
        " retrieval method is fixed. Use it to find where something is discussed; it is not"
        " the full set of relevant blocks — for everything in a section use list_blocks, for"
        " every occurrence of a string use scan_term. If the query cannot be embedded it fails"
        " with upstream_unavailable; it never quietly searches keywords only.",
        {"blocks": " best first"},
        " Cite a block as 【来源:citation】.",
        "no block in scope was a good enough candidate (no_match), or the scope holds no"
        " blocks (scope_empty, collection_empty).",
        "that the documents do not discuss it: try other words, or scan_term / list_blocks.",
    ),
    "list_blocks": (
        "Every block of ONE document, or of the sections you name, in document order, with"
        " full text. A section path includes all its subsections; several paths give their"
        " union, each block once. section_paths omitted or [] means the whole document. It"
        " never truncates: total always equals the number of blocks returned, and a single"
        " unknown path fails the whole call (scope_not_found). For several documents call it"
        " once per document.",
        {"blocks": " in block order"},
        "",
        "the named sections hold no blocks, only headings (scope_empty).",
        "(an empty scope is complete: there is nothing else in it.)",
    ),
    "scan_term": (
        "Every occurrence of an exact string in all documents or the doc_ids you list,"
        " ignoring only letter case, Unicode form and the term's surrounding whitespace: no"
        " word splitting, stemming, synonyms or punctuation changes. Returns every hit, by"
        " document then block, with a snippet for locating it. A snippet is not the block:"
        " a hit is not evidence, and a citation of a block you saw only as a hit is shown"
        " as located, not read. Read the block with list_blocks (or find it with"
        " search_blocks) before citing it.",
        {"count": " = occurrences over all hits"},
        "",
        "this exact string does not occur in the scope (count 0, empty_reason no_match).",
        "that the concept is absent: other wordings, spellings or languages are not found.",
    ),
}

_COMMON = """\
Cite only blocks whose full text a result gave you (search_blocks, list_blocks); a scan_term
hit only says where a block is. Every result also carries token_estimate (its size in
tokens). An empty result is legal and says why in empty_reason: no_match (the scope is
valid, nothing matched), scope_empty (the scope holds no blocks), collection_empty (the
knowledge base has no documents). A failure is
{"error": {"code", "message", "retryable"}} instead:
- invalid_argument: fix the arguments as the message says and call again;
- scope_not_found: a doc_id or section path does not exist (nothing was read); correct it
  with list_documents / get_outline, or ask the user;
- collection_unavailable: there is no readable knowledge base; stop and say so;
- upstream_unavailable: a service the tool needs failed; retry only if retryable is true,
  otherwise use other tools or report it;
- tool_internal_error: the tool failed; do not repeat the same call, report it."""


# Fields every result carries, explained once for all tools in _COMMON.
_COMMON_FIELDS = frozenset({"empty_reason", "token_estimate", "contract_version"})


def _shape(kind: Type) -> str:
    """`[{a, b, c [{…}]}]` for a list of Structs, "" for a plain value."""
    if isinstance(kind, UnionType):  # e.g. `X | None`: describe X
        shapes = [_shape(t) for t in kind.types]
        return next((x for x in shapes if x), "")
    if isinstance(kind, CollectionType) and isinstance(kind.item_type, StructType):
        fields = (f"{f.encode_name}{_spaced(_shape(f.type))}" for f in kind.item_type.fields)
        return "[{" + ", ".join(fields) + "}]"
    return ""


def _spaced(shape: str) -> str:
    return f" {shape}" if shape else ""


def returns_text(name: ToolName) -> str:
    """What the model is told a result holds: each field of the tool's result Struct with the
    shape of its items, in encoding order, and how the tool orders them."""
    _, notes, closing, _, _ = _TEXT[name]
    info = type_info(RESULTS[name])
    assert isinstance(info, StructType)
    parts = [
        f"{f.encode_name}{_spaced(_shape(f.type))}{notes.get(f.encode_name, '')}"
        for f in info.fields
        if f.encode_name not in _COMMON_FIELDS
    ]
    return "; ".join(parts) + "." + closing


def arguments_schema(name: ToolName) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments, from the Struct the executor validates against."""
    kind = ARGUMENTS[name]
    (_, components) = msgspec.json.schema_components([kind])
    schema: dict[str, Any] = dict(components[kind.__name__])
    schema.pop("title", None)  # the tool name says it
    return schema


def tool_descriptions(top_k: int = 5) -> tuple[ToolDescription, ...]:
    """`top_k` is the snapshot's retrieval.top_k (how many blocks search_blocks returns)."""
    out = []
    for name in TOOL_NAMES:
        purpose, _, _, proves, does_not = _TEXT[name]
        out.append(
            ToolDescription(
                name=name,
                purpose=purpose.replace("{top_k}", str(top_k)),
                arguments=arguments_schema(name),
                returns=returns_text(name),
                empty_proves=proves,
                empty_does_not_prove=does_not,
            )
        )
    return tuple(out)


def render_tools(descriptions: tuple[ToolDescription, ...] | None = None, *, top_k: int = 5) -> str:
    """The {tools} text of the system prompt: one paragraph per tool, then what empty results
    and error codes mean. Deterministic (part of the prompt's identity)."""
    if descriptions is None:
        return _render_default(top_k)  # every request renders this: ~10 ms of the event loop
    return _render(descriptions)


@functools.lru_cache(maxsize=8)
def _render_default(top_k: int) -> str:
    return _render(tool_descriptions(top_k))


def _render(descriptions: tuple[ToolDescription, ...]) -> str:
    parts: list[str] = []
    for d in descriptions:
        schema = msgspec.json.encode(d.arguments).decode("utf-8")
        parts.append(
            f"## {d.name}\n{d.purpose}\nArguments (JSON Schema): {schema}\n"
            f"Returns: {d.returns}\nAn empty result proves: {d.empty_proves}\n"
            f"It does not prove: {d.empty_does_not_prove}"
        )
    parts.append(_COMMON)
    return "\n\n".join(parts)
