"""Running one of the five tools: validate the JSON arguments, run the tool on the pinned
snapshot, encode the exact JSON the model will see and count its tokens.

Every outcome the model may see is data (a result or an error payload); an unexpected exception
inside a tool becomes tool_internal_error, never an exception for the caller. Only a name that
is not one of the five tools raises (UnknownTool). CPU-heavy work runs in worker threads.
Written against anyio only. Tools never budget and never truncate: admission is the harness's.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio.to_thread
import msgspec

from engine.config import DEFAULT_MAX_QUERY_CHARS, RetrievalSettings
from engine.embedding import EmbeddingProvider
from engine.tokens import TokenCounter
from engine.tools.contracts import (
    ARGUMENTS,
    TOOL_CONTRACT_VERSION,
    TOOL_NAMES,
    ErrorResult,
    GetOutlineArgs,
    ListBlocksArgs,
    ListDocumentsArgs,
    ScanTermArgs,
    SearchBlocksArgs,
    ToolArguments,
    ToolInternals,
    ToolName,
    ToolResult,
    UnknownTool,
    tool_error,
)
from engine.tools.describe import arguments_schema
from engine.tools.get_outline import get_outline
from engine.tools.list_blocks import list_blocks
from engine.tools.list_documents import list_documents
from engine.tools.scan_term import scan_term
from engine.tools.search_blocks import search_blocks
from index.records import RetrievalParams
from index.snapshot import Snapshot

_DECODERS = {name: msgspec.json.Decoder(kind) for name, kind in ARGUMENTS.items()}
_encoder = msgspec.json.Encoder()


def retrieval_params(settings: RetrievalSettings) -> RetrievalParams:
    """The [retrieval] settings as a snapshot's manifest records them."""
    return RetrievalParams(
        bm25_k1=settings.bm25_k1,
        bm25_b=settings.bm25_b,
        rrf_k=settings.rrf_k,
        top_k=settings.top_k,
        min_similarity=settings.min_similarity,
        exact_search_max_blocks=settings.exact_search_max_blocks,
    )


def default_retrieval_params() -> RetrievalParams:
    """Parameters for a snapshot whose manifest records none (the configuration defaults)."""
    return retrieval_params(RetrievalSettings())


# What the model is told when there is no snapshot at all (nothing imported yet).
NO_SNAPSHOT = (
    "there is no usable knowledge-base snapshot (nothing imported yet, or the last import "
    "failed); no tool can read documents until an import succeeds"
)


@dataclass(frozen=True)
class ToolContext:
    """What the tools of one request share: the pinned snapshot (None when the collection has
    no usable snapshot, `unavailable` then saying why: what is damaged and how to repair it),
    the embedding provider for queries, the token counter and search_blocks' query limit."""

    snapshot: Snapshot | None
    embedder: EmbeddingProvider
    counter: TokenCounter
    unavailable: str = NO_SNAPSHOT
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS

    @property
    def params(self) -> RetrievalParams:
        """Retrieval parameters recorded in the snapshot's manifest: the ones it was built for."""
        recorded = self.snapshot.manifest.retrieval if self.snapshot is not None else None
        return recorded if recorded is not None else default_retrieval_params()


class ToolOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call's outcome. `result` is the typed result, `json` exactly what the model
    sees of it; `internal` (scores, ranks, embedding usage) is for the trace and the harness,
    never part of `json`."""

    tool: ToolName
    result: ToolResult
    json: bytes
    token_estimate: int
    internal: ToolInternals = ToolInternals()
    contract_version: int = TOOL_CONTRACT_VERSION
    elapsed_s: float = 0.0

    @property
    def is_error(self) -> bool:
        return isinstance(self.result, ErrorResult)

    @property
    def ok(self) -> bool:
        return not self.is_error


def arguments_type(name: str) -> type[ToolArguments]:
    """The Struct a tool's arguments are validated against (and described by)."""
    if name not in ARGUMENTS:
        raise UnknownTool(name)
    return ARGUMENTS[name]


async def run_tool(
    ctx: ToolContext, name: str, args: str | bytes | Mapping[str, Any]
) -> ToolOutcome:
    """Run tool `name` with JSON `args` (text, bytes or an already decoded object)."""
    arguments_type(name)  # raises UnknownTool for anything but the five
    tool: ToolName = name  # type: ignore[assignment]
    started = time.perf_counter()
    internal = ToolInternals()
    result: ToolResult
    try:
        parsed = decode_arguments(tool, args)
        if isinstance(parsed, ErrorResult):
            result = parsed
        elif ctx.snapshot is None:
            result = tool_error("collection_unavailable", ctx.unavailable)
        else:
            result, internal = await _dispatch(ctx, ctx.snapshot, parsed)
    except Exception as exc:  # a bug in a tool: the model gets an error payload, not a crash
        result = tool_error(
            "tool_internal_error",
            f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); this path is unusable "
            "for now, try another tool or report the problem",
        )
        internal = ToolInternals(exception=type(exc).__name__, detail=str(exc))
    encoded, estimate = await anyio.to_thread.run_sync(finish, result, ctx.counter)
    return ToolOutcome(
        tool=tool,
        result=msgspec.structs.replace(result, token_estimate=estimate),
        json=encoded,
        token_estimate=estimate,
        internal=internal,
        elapsed_s=time.perf_counter() - started,
    )


_Runner = Callable[[ToolContext, Snapshot, Any], Awaitable[tuple[ToolResult, ToolInternals]]]


async def _in_thread(
    func: Callable[[Snapshot, Any], ToolResult], ctx: ToolContext, snapshot: Snapshot, args: Any
) -> tuple[ToolResult, ToolInternals]:
    return await anyio.to_thread.run_sync(func, snapshot, args), ToolInternals()


async def _search(
    ctx: ToolContext, snapshot: Snapshot, args: SearchBlocksArgs
) -> tuple[ToolResult, ToolInternals]:
    run = await search_blocks(
        snapshot, ctx.embedder, ctx.params, args, max_query_chars=ctx.max_query_chars
    )
    return run.result, run.internal


_RUNNERS: dict[type[ToolArguments], _Runner] = {
    ListDocumentsArgs: partial(_in_thread, list_documents),
    GetOutlineArgs: partial(_in_thread, get_outline),
    SearchBlocksArgs: _search,
    ListBlocksArgs: partial(_in_thread, list_blocks),
    ScanTermArgs: partial(_in_thread, scan_term),
}
assert set(_RUNNERS) == set(ARGUMENTS.values()) and len(TOOL_NAMES) == len(_RUNNERS)


async def _dispatch(
    ctx: ToolContext, snapshot: Snapshot, args: ToolArguments
) -> tuple[ToolResult, ToolInternals]:
    return await _RUNNERS[type(args)](ctx, snapshot, args)


# -- arguments ---------------------------------------------------------------------------------

_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<field>[^`]*)`")
_MISSING = re.compile(r"Object missing required field `(?P<field>[^`]*)`")


def decode_arguments(
    name: ToolName, args: str | bytes | Mapping[str, Any]
) -> ToolArguments | ErrorResult:
    """The tool's argument Struct, or invalid_argument saying which field is wrong and what
    was expected. The same Struct produces the schema the model is shown (describe.py)."""
    kind = ARGUMENTS[name]
    try:
        if isinstance(args, str | bytes):
            return _DECODERS[name].decode(args)
        return msgspec.convert(dict(args), kind)
    except msgspec.ValidationError as exc:
        return tool_error("invalid_argument", f"{name}: {_explain(name, str(exc))}")
    except msgspec.DecodeError as exc:
        return tool_error(
            "invalid_argument", f"{name}: the arguments are not valid JSON ({exc}); send one object"
        )
    except TypeError:
        return tool_error(
            "invalid_argument", f"{name}: the arguments must be a JSON object of named fields"
        )


# msgspec's wording, for the shapes our argument Structs can fail on.
_BLANK = re.compile(r"^Expected `str` matching regex '.*'$")
_TOO_SHORT = re.compile(r"^Expected `(?P<kind>str|array)` of length >= (?P<n>\d+)$")
_WRONG_TYPE = re.compile(r"^Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`$")
_JSON_KINDS = {
    "str": "text (a JSON string)",
    "array": "a list (a JSON array)",
    "object": "a JSON object",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "null": "null",
}


def _kind(name: str) -> str:
    # "array | null": the field accepts either; say the first, which is what the model meant
    first = name.split("|")[0].strip()
    return _JSON_KINDS.get(first, f"`{first}`")


def _explain(name: ToolName, error: str) -> str:
    """msgspec's validation error in words the model can act on: which argument, what is
    wrong with it, what the field is for (its description in the schema)."""
    kind = ARGUMENTS[name]
    fields = [f.encode_name for f in msgspec.structs.fields(kind)]
    required = [f.encode_name for f in msgspec.structs.fields(kind) if f.required]
    allowed = f"fields: {', '.join(fields)} (required: {', '.join(required) or 'none'})"
    if m := _UNKNOWN.search(error):
        return f"there is no field {m['field']!r}; {allowed}"
    if m := _MISSING.search(error):
        return f"the field {m['field']!r} is required; {allowed}"
    m = _AT.search(error)
    where = (m["path"].lstrip(".") or "arguments") if m else "arguments"
    problem = error[: m.start()] if m else error
    if where == "arguments":
        wrong = _WRONG_TYPE.match(problem)
        got = f", not {_kind(wrong['got'])}" if wrong else f" ({problem})"
        return f"the arguments must be a JSON object{got}; {allowed}"
    if _BLANK.match(problem):
        said = f"`{where}` must not be blank"
    elif short := _TOO_SHORT.match(problem):
        n = int(short["n"])
        said = (
            f"`{where}` must not be empty"
            if short["kind"] == "str"
            else f"`{where}` must list at least {'one item' if n == 1 else f'{n} items'}"
        )
    elif wrong := _WRONG_TYPE.match(problem):
        said = f"`{where}` must be {_kind(wrong['want'])}, not {_kind(wrong['got'])}"
    else:
        said = f"`{where}`: {problem}"
    field = re.split(r"[.\[]", where, maxsplit=1)[0]
    hint = field_descriptions(name).get(field, "")
    return said + (f" ({field}: {hint})" if hint else "")


@functools.cache
def field_descriptions(name: ToolName) -> dict[str, str]:
    """Each argument's description, exactly as the model reads it in the tool's schema."""
    return {
        field: spec.get("description") or spec.get("items", {}).get("description", "")
        for field, spec in arguments_schema(name)["properties"].items()
    }


# -- the model-facing JSON ---------------------------------------------------------------------


def finish(result: ToolResult, counter: TokenCounter) -> tuple[bytes, int]:
    """The result's JSON and its DeepSeek token count, token_estimate included.

    The count is of the JSON with token_estimate 0, corrected for the digits of the real
    number: the tokenizer splits digits off into groups of up to three whatever surrounds
    them, so the corrected count is exactly the count of the final JSON (tested).
    """
    draft = _encoder.encode(msgspec.structs.replace(result, token_estimate=0))
    base = counter.count(draft.decode("utf-8")) - counter.count("0")
    estimate = base + counter.count("0")
    for _ in range(4):  # converges in one or two rounds: digits grow very slowly
        better = base + counter.count(str(estimate))
        if better == estimate:
            break
        estimate = better
    return _encoder.encode(msgspec.structs.replace(result, token_estimate=estimate)), estimate
