"""Completeness checks of a gold set on one snapshot, with no chat model: does list_blocks
enumerate a coverage question's sections (SPEC §15: expected_sections against the last
component of section paths), and does scan_term count a scan question's term exactly?
It only reads the snapshot and never counts a document twice.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread
import msgspec

from engine.evaluation.gold import GoldItem, GoldSet, contains_quote, normalize, normalize_answer
from engine.evaluation.retrieval import source_index
from engine.parsing.model import PATH_SEPARATOR
from engine.tools import BlocksResult, ErrorResult, ScanTermResult, ToolContext, run_tool
from engine.tools.retrieval import heading_key
from index.textnorm import fold

# A scan passes when scan_term's count equals a naive NFC+casefold count over the snapshot's
# own block text (exactness) and reaches this share of the gold min_count. min_count is taken
# from the raw extracted text, contents pages, running headers and link definitions included,
# which a parser rightly drops (GOLD-FORMAT.md); on the shared corpus the ratios are 0.90–1.00
# (EPUB navigation, PDF contents lines). Losing a quarter is more than such furniture accounts
# for: body text is missing.
SCAN_MIN_RATIO = 0.75


class CoverageRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    document: str
    scope: str  # the section path listed ("" = the whole document)
    expected: tuple[str, ...]
    found: tuple[str, ...]  # expected sections list_blocks reached
    not_in_outline: tuple[str, ...]  # expected sections the outline does not have
    blocks: int  # blocks returned
    total: int  # the result's total (must equal blocks)
    evidence: int  # evidence quotes of this document
    evidence_found: int  # … that lie inside a returned block
    complete: bool
    problem: str = ""


class ScanRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    term: str
    documents: tuple[str, ...]
    min_count: int  # the gold reference on raw extracted text
    count: int = 0  # scan_term's count
    naive_count: int = 0  # NFC + casefold str.count over the same stored block text
    ratio: float = 0.0  # count / min_count
    exact: bool = False
    passed: bool = False
    problem: str = ""


def section_key(title: str) -> str:
    """A heading compared with a gold section title: number, case, width, quotes, spaces off."""
    return normalize_answer(heading_key(title))


def _components(path: str) -> list[str]:
    return path.split(PATH_SEPARATOR)


def _scope(paths: Sequence[str]) -> str:
    """The deepest section containing every path: their longest common component prefix;
    one path is its own scope, paths under different top sections need the whole document."""
    split = [_components(p) for p in paths]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return PATH_SEPARATOR.join(common)


# Coverage: each expected section is looked up by the last component of the outline's section
# paths (section numbers, case, width, quotes and whitespace ignored); the scope is the smallest
# section holding all of them; list_blocks over it must return every block (total == returned),
# reach every expected section and hold every evidence quote of the document.
async def coverage_row(
    ctx: ToolContext, item: GoldItem, document: str, ordinal: int
) -> CoverageRow:
    snapshot = ctx.snapshot
    assert snapshot is not None
    info = snapshot.documents[ordinal]
    doc_id = info.doc_id
    by_key: dict[str, list[str]] = {}
    for section in info.sections:
        by_key.setdefault(section_key(_components(section.path)[-1]), []).append(section.path)
    matched: list[str] = []
    not_in_outline: list[str] = []
    for title in item.expected_sections:
        paths = by_key.get(section_key(title))
        if paths:
            matched.append(paths[0])
        else:
            not_in_outline.append(title)
    quotes = [normalize(e.quote) for e in item.evidence if e.document == document]
    scope = _scope(matched) if matched else ""
    args: dict[str, object] = {"doc_id": doc_id}
    if scope:
        args["section_paths"] = [scope]
    outcome = await run_tool(ctx, "list_blocks", args)
    result = outcome.result
    if isinstance(result, ErrorResult) or not isinstance(result, BlocksResult):
        problem = result.error.message if isinstance(result, ErrorResult) else "unexpected result"
        return CoverageRow(
            id=item.id,
            document=document,
            scope=scope,
            expected=item.expected_sections,
            found=(),
            not_in_outline=tuple(not_in_outline),
            blocks=0,
            total=0,
            evidence=len(quotes),
            evidence_found=0,
            complete=False,
            problem=f"list_blocks failed: {problem}",
        )
    reached: set[str] = set()
    for block in result.blocks:
        reached.update(section_key(part) for part in _components(block.section))
    found = tuple(t for t in item.expected_sections if section_key(t) in reached)
    evidence_found = sum(
        1 for q in quotes if any(contains_quote(b.text, [q]) for b in result.blocks)
    )
    problems = []
    if not_in_outline:
        problems.append(f"not in the outline: {', '.join(not_in_outline)}")
    if result.total != len(result.blocks):
        problems.append(f"total {result.total} but {len(result.blocks)} blocks returned")
    if evidence_found < len(quotes):
        problems.append(f"{len(quotes) - evidence_found} evidence quote(s) outside the blocks")
    complete = not problems and len(found) == len(item.expected_sections)
    return CoverageRow(
        id=item.id,
        document=document,
        scope=scope,
        expected=item.expected_sections,
        found=found,
        not_in_outline=tuple(not_in_outline),
        blocks=len(result.blocks),
        total=result.total,
        evidence=len(quotes),
        evidence_found=evidence_found,
        complete=complete,
        problem="; ".join(problems),
    )


async def coverage_rows(ctx: ToolContext, gold: GoldSet) -> list[CoverageRow]:
    """One row per coverage question and document; a document missing from the snapshot is an
    incomplete row, not a skipped one."""
    assert ctx.snapshot is not None
    known = source_index(ctx.snapshot)
    rows: list[CoverageRow] = []
    for item in gold.items:
        if item.kind != "coverage":
            continue
        for document in item.documents:
            doc_id = known.get(document)
            ordinal = None if doc_id is None else ctx.snapshot.doc_ordinal(doc_id)
            if ordinal is None:
                rows.append(_missing_coverage(item, document))
            else:
                rows.append(await coverage_row(ctx, item, document, ordinal))
    return rows


def _missing_coverage(item: GoldItem, document: str) -> CoverageRow:
    return CoverageRow(
        id=item.id,
        document=document,
        scope="",
        expected=item.expected_sections,
        found=(),
        not_in_outline=item.expected_sections,
        blocks=0,
        total=0,
        evidence=sum(1 for e in item.evidence if e.document == document),
        evidence_found=0,
        complete=False,
        problem=f"{document} is not in this snapshot",
    )


def naive_count(ctx: ToolContext, doc_ids: Sequence[str], term: str) -> int:
    """Non-overlapping occurrences of `term` in the stored text of the documents' blocks."""
    snapshot = ctx.snapshot
    assert snapshot is not None
    needle = fold(term.strip())
    total = 0
    for doc_id in doc_ids:
        ordinal = snapshot.doc_ordinal(doc_id)
        assert ordinal is not None
        for block in snapshot.documents[ordinal].block_range:
            total += fold(snapshot.block(block).text).count(needle)
    return total


async def scan_row(ctx: ToolContext, item: GoldItem, known: dict[str, str]) -> ScanRow:
    assert item.term is not None and item.min_count is not None
    missing = [d for d in item.documents if d not in known]
    doc_ids = [known[d] for d in item.documents if d in known]
    row = ScanRow(id=item.id, term=item.term, documents=item.documents, min_count=item.min_count)
    if missing or not doc_ids:
        return msgspec.structs.replace(
            row, problem=f"not in this snapshot: {', '.join(missing) or 'no documents named'}"
        )
    outcome = await run_tool(ctx, "scan_term", {"term": item.term, "doc_ids": doc_ids})
    result = outcome.result
    naive = await anyio.to_thread.run_sync(naive_count, ctx, doc_ids, item.term)
    if not isinstance(result, ScanTermResult):
        problem = result.error.message if isinstance(result, ErrorResult) else "unexpected result"
        return msgspec.structs.replace(
            row, naive_count=naive, problem=f"scan_term failed: {problem}"
        )
    ratio = result.count / item.min_count
    exact = result.count == naive == sum(h.count for h in result.hits)
    problems = []
    if not exact:
        problems.append(f"scan_term counted {result.count}, the naive scan {naive}")
    if ratio < SCAN_MIN_RATIO:
        problems.append(f"only {ratio:.0%} of the gold min_count {item.min_count}")
    return msgspec.structs.replace(
        row,
        count=result.count,
        naive_count=naive,
        ratio=ratio,
        exact=exact,
        passed=not problems,
        problem="; ".join(problems),
    )


async def scan_rows(ctx: ToolContext, gold: GoldSet) -> list[ScanRow]:
    assert ctx.snapshot is not None
    known = source_index(ctx.snapshot)
    return [await scan_row(ctx, item, known) for item in gold.items if item.kind == "scan"]
