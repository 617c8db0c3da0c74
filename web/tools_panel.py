"""Direct tool use without a model: search, find every occurrence of a term, list a section.

Results are the tools' exact results, shown as title · section · pages and the block text
(plain text, never HTML). Documents are chosen by title; ids are never shown.
"""

from __future__ import annotations

from typing import Any

import msgspec
from nicegui import ui

from actors import App, DocumentView
from web.error_view import details_toggle
from web.i18n import TEXTS, Texts
from web.shell import show_error
from web.source_viewer import pages_text

ALL = ""
RESULTS_SHOWN = 200
# The field each tool cannot run without, and the sentence that asks for it.
_REQUIRED = {
    "search_blocks": ("query", "lib.tool.need_query"),
    "scan_term": ("term", "lib.tool.need_term"),
}


class ToolsPanel:
    def __init__(self, app: App, t: Texts, documents: list[DocumentView]) -> None:
        self.app = app
        self.t = t
        options = {ALL: t("lib.tool.all_documents")} | {
            d.doc_id: f"{d.title} ({d.source})" for d in documents
        }
        doc_only = {d.doc_id: f"{d.title} ({d.source})" for d in documents}
        with ui.card().classes("w-full").mark("tools-panel"):
            ui.label(t("lib.tools")).classes("text-base font-semibold")
            with ui.tabs().classes("w-full") as tabs:
                search_tab = ui.tab(t("lib.tool.search")).mark("tool-tab-search")
                scan_tab = ui.tab(t("lib.tool.scan")).mark("tool-tab-scan")
                list_tab = ui.tab(t("lib.tool.list")).mark("tool-tab-list")
            with ui.tab_panels(tabs, value=search_tab).classes("w-full"):
                with ui.tab_panel(search_tab):
                    query = ui.input(t("lib.tool.query")).classes("w-full").mark("tool-query")
                    search_doc = ui.select(
                        options, value=ALL, label=t("lib.tool.document")
                    ).classes("min-w-[16rem]")
                    ui.button(
                        t("lib.tool.run"),
                        on_click=lambda: self._run(
                            "search_blocks", {"query": query.value, **_scope(search_doc.value)}
                        ),
                    ).mark("tool-run-search")
                with ui.tab_panel(scan_tab):
                    term = ui.input(t("lib.tool.term")).classes("w-full").mark("tool-term")
                    scan_doc = ui.select(options, value=ALL, label=t("lib.tool.document")).classes(
                        "min-w-[16rem]"
                    )
                    ui.button(
                        t("lib.tool.run"),
                        on_click=lambda: self._run(
                            "scan_term", {"term": term.value, **_scope(scan_doc.value)}
                        ),
                    ).mark("tool-run-scan")
                with ui.tab_panel(list_tab):
                    first = next(iter(doc_only), None)
                    list_doc = ui.select(
                        doc_only, value=first, label=t("lib.tool.document")
                    ).classes("min-w-[16rem]")
                    section = ui.select({}, label=t("lib.tool.section"), clearable=True).classes(
                        "w-full"
                    )
                    list_doc.on_value_change(lambda e: self._sections(section, e.value))
                    self._sections(section, first)
                    ui.button(
                        t("lib.tool.run"),
                        on_click=lambda: self._run(
                            "list_blocks",
                            {
                                "doc_id": list_doc.value,
                                "section_paths": [section.value] if section.value else [],
                            },
                        ),
                    ).mark("tool-run-list")
            self.output = ui.column().classes("w-full gap-1").mark("tool-output")

    def _sections(self, select: ui.select, doc_id: str | None) -> None:
        if not doc_id:
            select.set_options({})
            return
        try:
            outline = self.app.outline(doc_id)
        except Exception as exc:  # the document left the snapshot meanwhile
            show_error(self.t, exc)
            return
        select.set_options({s.path: ("  " * (s.depth - 1)) + s.title for s in outline})
        select.set_value(None)

    async def _run(self, tool: str, args: dict[str, Any]) -> None:
        field, need = _REQUIRED.get(tool, ("", ""))
        if field and not str(args.get(field) or "").strip():
            self.output.clear()
            with self.output:
                ui.label(self.t(need)).classes("text-sm").mark("tool-need")
            return
        if tool == "list_blocks" and not args.get("doc_id"):
            self.output.clear()
            with self.output:
                ui.label(self.t("lib.tool.need_document")).classes("text-sm").mark("tool-need")
            return
        try:
            outcome = await self.app.run_tool(tool, args)
            result: dict[str, Any] = msgspec.json.decode(outcome.json)
        except Exception as exc:  # shown to the person
            show_error(self.t, exc)
            return
        self.output.clear()
        with self.output:
            _render_result(self.t, result)


def _scope(doc_id: str | None) -> dict[str, Any]:
    return {"doc_ids": [doc_id]} if doc_id else {}


def _render_result(t: Texts, result: dict[str, Any]) -> None:
    error = result.get("error")
    if error:
        key = f"lib.tool.error.{error.get('code')}"
        ui.label(t(key if key in TEXTS else "lib.tool.error.tool_internal_error")).classes(
            "text-red-700 text-sm"
        ).mark("tool-error")
        details_toggle(t, f"{error.get('code')}: {error.get('message')}")
        return
    if result.get("empty_reason"):
        key = f"lib.tool.empty.{result['empty_reason']}"
        ui.label(t(key if key in TEXTS else "lib.tool.empty.no_match")).classes("text-sm").mark(
            "tool-empty"
        )
        return
    if "hits" in result:
        ui.label(t("lib.tool.hits", count=result.get("count", 0))).classes("text-sm").mark(
            "tool-count"
        )
        for hit in result["hits"][:RESULTS_SHOWN]:
            with ui.card().classes("w-full p-2").mark("tool-hit"):
                ui.label(f"{hit['title']} · {hit['section']} · ×{hit['count']}").classes(
                    "text-xs font-semibold"
                )
                ui.label(hit["snippet"]).classes("text-sm whitespace-pre-wrap")
        return
    blocks = result.get("blocks", [])
    ui.label(t("lib.tool.blocks", total=result.get("total", len(blocks)))).classes("text-sm").mark(
        "tool-count"
    )
    for block in blocks[:RESULTS_SHOWN]:
        with ui.card().classes("w-full p-2").mark("tool-block"):
            pages = pages_text(t, block.get("page_start"), block.get("page_end"))
            head = " · ".join(p for p in (block["title"], block["section"], pages) if p)
            ui.label(head).classes("text-xs font-semibold")
            ui.label(block["text"]).classes("text-sm whitespace-pre-wrap")
