"""The five read-only tools (list_documents, get_outline, search_blocks, list_blocks,
scan_term): their contracts, the executor the harness and CLI call, and their descriptions.

Callers import from here. Tools only read the pinned snapshot; they never write, never budget
and never truncate.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.tools.contracts import (
        ARGUMENTS,
        RESULTS,
        TOOL_CONTRACT_VERSION,
        TOOL_NAMES,
        BlockItem,
        BlocksResult,
        DocumentSummary,
        EmptyReason,
        ErrorResult,
        GetOutlineArgs,
        GetOutlineResult,
        ListBlocksArgs,
        ListDocumentsArgs,
        ListDocumentsResult,
        OutlineDocument,
        OutlineSection,
        ReturnedItem,
        ScanHit,
        ScanTermArgs,
        ScanTermResult,
        SearchBlocksArgs,
        ToolArguments,
        ToolError,
        ToolErrorCode,
        ToolInternals,
        ToolName,
        ToolResult,
        UnknownTool,
        cited_refs,
        decode_result,
        empty_reason_of,
        error_of,
        located_refs,
        outcome_of,
        read_result,
        returned_citations,
        returned_items,
        shown_text,
    )
    from engine.tools.describe import (
        ToolDescription,
        arguments_schema,
        render_tools,
        tool_descriptions,
    )
    from engine.tools.executor import (
        NO_SNAPSHOT,
        ToolContext,
        ToolOutcome,
        arguments_type,
        decode_arguments,
        default_retrieval_params,
        retrieval_params,
        run_tool,
    )
    from engine.tools.retrieval import RETRIEVAL_VERSION, SearchTrace

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "ARGUMENTS": ("engine.tools.contracts", "ARGUMENTS"),
    "RESULTS": ("engine.tools.contracts", "RESULTS"),
    "TOOL_CONTRACT_VERSION": ("engine.tools.contracts", "TOOL_CONTRACT_VERSION"),
    "TOOL_NAMES": ("engine.tools.contracts", "TOOL_NAMES"),
    "BlockItem": ("engine.tools.contracts", "BlockItem"),
    "BlocksResult": ("engine.tools.contracts", "BlocksResult"),
    "DocumentSummary": ("engine.tools.contracts", "DocumentSummary"),
    "EmptyReason": ("engine.tools.contracts", "EmptyReason"),
    "ErrorResult": ("engine.tools.contracts", "ErrorResult"),
    "GetOutlineArgs": ("engine.tools.contracts", "GetOutlineArgs"),
    "GetOutlineResult": ("engine.tools.contracts", "GetOutlineResult"),
    "ListBlocksArgs": ("engine.tools.contracts", "ListBlocksArgs"),
    "ListDocumentsArgs": ("engine.tools.contracts", "ListDocumentsArgs"),
    "ListDocumentsResult": ("engine.tools.contracts", "ListDocumentsResult"),
    "OutlineDocument": ("engine.tools.contracts", "OutlineDocument"),
    "OutlineSection": ("engine.tools.contracts", "OutlineSection"),
    "ReturnedItem": ("engine.tools.contracts", "ReturnedItem"),
    "ScanHit": ("engine.tools.contracts", "ScanHit"),
    "ScanTermArgs": ("engine.tools.contracts", "ScanTermArgs"),
    "ScanTermResult": ("engine.tools.contracts", "ScanTermResult"),
    "SearchBlocksArgs": ("engine.tools.contracts", "SearchBlocksArgs"),
    "ToolArguments": ("engine.tools.contracts", "ToolArguments"),
    "ToolError": ("engine.tools.contracts", "ToolError"),
    "ToolErrorCode": ("engine.tools.contracts", "ToolErrorCode"),
    "ToolInternals": ("engine.tools.contracts", "ToolInternals"),
    "ToolName": ("engine.tools.contracts", "ToolName"),
    "ToolResult": ("engine.tools.contracts", "ToolResult"),
    "UnknownTool": ("engine.tools.contracts", "UnknownTool"),
    "cited_refs": ("engine.tools.contracts", "cited_refs"),
    "decode_result": ("engine.tools.contracts", "decode_result"),
    "empty_reason_of": ("engine.tools.contracts", "empty_reason_of"),
    "error_of": ("engine.tools.contracts", "error_of"),
    "located_refs": ("engine.tools.contracts", "located_refs"),
    "outcome_of": ("engine.tools.contracts", "outcome_of"),
    "read_result": ("engine.tools.contracts", "read_result"),
    "returned_citations": ("engine.tools.contracts", "returned_citations"),
    "returned_items": ("engine.tools.contracts", "returned_items"),
    "shown_text": ("engine.tools.contracts", "shown_text"),
    "ToolDescription": ("engine.tools.describe", "ToolDescription"),
    "arguments_schema": ("engine.tools.describe", "arguments_schema"),
    "render_tools": ("engine.tools.describe", "render_tools"),
    "tool_descriptions": ("engine.tools.describe", "tool_descriptions"),
    "NO_SNAPSHOT": ("engine.tools.executor", "NO_SNAPSHOT"),
    "ToolContext": ("engine.tools.executor", "ToolContext"),
    "ToolOutcome": ("engine.tools.executor", "ToolOutcome"),
    "arguments_type": ("engine.tools.executor", "arguments_type"),
    "decode_arguments": ("engine.tools.executor", "decode_arguments"),
    "default_retrieval_params": ("engine.tools.executor", "default_retrieval_params"),
    "retrieval_params": ("engine.tools.executor", "retrieval_params"),
    "run_tool": ("engine.tools.executor", "run_tool"),
    "RETRIEVAL_VERSION": ("engine.tools.retrieval", "RETRIEVAL_VERSION"),
    "SearchTrace": ("engine.tools.retrieval", "SearchTrace"),
}

__all__ = [
    "ARGUMENTS",
    "NO_SNAPSHOT",
    "RESULTS",
    "RETRIEVAL_VERSION",
    "TOOL_CONTRACT_VERSION",
    "TOOL_NAMES",
    "BlockItem",
    "BlocksResult",
    "DocumentSummary",
    "EmptyReason",
    "ErrorResult",
    "GetOutlineArgs",
    "GetOutlineResult",
    "ListBlocksArgs",
    "ListDocumentsArgs",
    "ListDocumentsResult",
    "OutlineDocument",
    "OutlineSection",
    "ReturnedItem",
    "ScanHit",
    "ScanTermArgs",
    "ScanTermResult",
    "SearchBlocksArgs",
    "SearchTrace",
    "ToolArguments",
    "ToolContext",
    "ToolDescription",
    "ToolError",
    "ToolErrorCode",
    "ToolInternals",
    "ToolName",
    "ToolOutcome",
    "ToolResult",
    "UnknownTool",
    "arguments_schema",
    "arguments_type",
    "cited_refs",
    "decode_arguments",
    "decode_result",
    "default_retrieval_params",
    "empty_reason_of",
    "error_of",
    "located_refs",
    "outcome_of",
    "read_result",
    "render_tools",
    "retrieval_params",
    "returned_citations",
    "returned_items",
    "run_tool",
    "shown_text",
    "tool_descriptions",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
