"""How the traces page says a trace's codes and figures in words, in the UI language: statuses,
reasons, tools and their arguments, blocks, tokens, money and durations.

Only words and formatting; no element is made here and nothing is read."""

from __future__ import annotations

from typing import Any

from actors import StoryBlock
from web.i18n import TEXTS, Texts

# Tool arguments that have a sentence of their own; any other key is shown as "key: value".
_SHOWN_ARGS = ("query", "term", "doc_ids", "doc_id", "section_paths", "source", "title_contains")


def said(t: Texts, prefix: str, value: str) -> str:
    """A status, reason, kind or mode in words; an unknown one as it is."""
    return t(prefix + value) if prefix + value in TEXTS else value


def reason(t: Texts, value: str | None) -> str:
    return said(t, "tr.reason.", value) if value else "–"


def number(n: int | float) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:,.0f}"


def money(amount: float, currency: str) -> str:
    return f"{amount:.4f} {currency}"


def duration(ms: float | None) -> str:
    if ms is None:
        return "…"
    return f"{ms / 1000:.1f} s" if ms >= 10_000 else f"{ms:.0f} ms"


def outcome(t: Texts, code: str) -> str:
    """A tool's outcome (ok, an empty reason, an error code) as a sentence."""
    return said(t, "tr.outcome.", code)


def tool_name(t: Texts, tool: str) -> str:
    return said(t, "tr.tool.", tool)


def _listed(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def tool_action(t: Texts, tool: str, args: dict[str, Any]) -> str:
    """What the model asked the tool to do, in plain terms: "Searched the documents for
    “listener order” (in d1)"."""
    if tool == "search_blocks":
        text = t("tr.do.search", query=args.get("query", ""))
    elif tool == "scan_term":
        text = t("tr.do.scan", term=args.get("term", ""))
    elif tool == "list_blocks":
        text = t("tr.do.list_blocks", doc=args.get("doc_id", ""))
    elif tool == "get_outline":
        text = t("tr.do.outline")
    elif tool == "list_documents":
        text = t("tr.do.documents")
    else:
        text = t("tr.do.other", tool=tool)
    scope = []
    if args.get("doc_ids") and tool != "list_blocks":
        scope.append(t("tr.do.in_docs", docs=_listed(args["doc_ids"])))
    if args.get("section_paths"):
        scope.append(t("tr.do.in_sections", sections=_listed(args["section_paths"])))
    for key in ("source", "title_contains", "lang"):
        if args.get(key):
            scope.append(t("tr.do.filter", name=key, value=_listed(args[key])))
    others = [f"{k}: {_listed(v)}" for k, v in args.items() if k not in _SHOWN_ARGS and k != "lang"]
    return " ".join([text, *(f"({s})" for s in scope + others)])


def pages(t: Texts, start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    if end is None or end == start:
        return t("tr.page", n=start)
    return t("tr.pages", start=start, end=end)


def block_label(t: Texts, block: StoryBlock) -> str:
    """Title · section · pages of a block; its id when nothing else is known."""
    parts = [block.title or block.source_label]
    section = block.section
    if block.title and section.startswith(block.title + " / "):  # the path repeats the title
        section = section[len(block.title) + 3 :]
    if section and section != block.title:
        parts.append(section)
    parts.append(pages(t, block.page_start, block.page_end))
    shown = " · ".join(p for p in parts if p)
    return shown or t("tr.block_unknown", citation=block.citation)
