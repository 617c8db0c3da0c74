"""Citations of a final answer: `【来源:doc_id#block_id】` markers checked against the blocks
that tools returned (and the harness admitted) during this request, resolved on the pinned
snapshot to title, section, pages and a preview.

A marker naming a block that was never returned is kept but flagged (valid=false) and never
resolved into evidence; so is one naming a block the model saw only as a scan_term snippet
("located, not read": resolved, so a person can see where it is, but not evidence). Only a
block whose full text a tool returned (search_blocks, list_blocks) is valid evidence. Nothing
here trusts the model's ids beyond looking them up.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

import msgspec

from engine.parsing.model import PATH_SEPARATOR
from engine.tools.contracts import ToolResult, cited_refs, located_refs, read_result
from index.snapshot import Snapshot

MARKER = re.compile(r"【\s*来源\s*[:：]\s*([^】]*?)\s*】")
_SPLIT = re.compile(r"[\s,，;；、]+")
PREVIEW_CHARS = 160
_MAX_MARKER = 400  # a 【 not closed within this many characters is not a marker

Problem = Literal["not_returned", "not_in_snapshot", "malformed", "located_not_read"]


class Citation(msgspec.Struct, frozen=True, kw_only=True):
    index: int  # 1-based, order of first appearance in the answer
    citation: str  # as written: "doc_id#block_id"
    doc_id: str
    block_id: str
    valid: bool
    problem: Problem | None = None
    occurrences: int = 1
    returned_by: tuple[str, ...] = ()  # tools that returned the block in this request
    title: str = ""
    source_label: str = ""
    section_path: str = ""
    section_title: str = ""
    page_start: int | None = None  # 1-based PDF page indexes
    page_end: int | None = None
    # The labels the PDF prints on those pages ("iv", "40"); "" when it prints none.
    page_label_start: str = ""
    page_label_end: str = ""
    preview: str = ""

    def pages_shown(self) -> tuple[str, str] | None:
        """The block's first and last page as a person finds them in the book: the printed
        labels when the PDF has them, else the page numbers; None when it has no pages."""
        if self.page_start is None:
            return None
        end = self.page_end if self.page_end is not None else self.page_start
        return (
            self.page_label_start or str(self.page_start),
            self.page_label_end or str(end),
        )

    @property
    def located_not_read(self) -> bool:
        """The model saw only a scan_term snippet of this block: it knows where, not what."""
        return self.problem == "located_not_read"

    def label(self) -> str:
        """How a person sees it: title · section · pages (never the raw id)."""
        if self.located_not_read:
            return f"located by a term scan, not read: {self._place()}"
        if not self.valid:
            return "unverified source (not among the blocks retrieved for this answer)"
        return self._place()

    def _place(self) -> str:
        parts = [self.title or self.source_label]
        section = self.section_path or self.section_title
        if section.startswith(self.title + PATH_SEPARATOR):
            section = section[len(self.title + PATH_SEPARATOR) :]
        if section and section != self.title:
            parts.append(section)
        shown = self.pages_shown()
        if shown is not None:
            first, last = shown
            parts.append(f"p. {first}" if first == last else f"pp. {first}–{last}")
        return " · ".join(p for p in parts if p)


class Evidence:
    """The blocks the model has actually read in this request (their full text), by citation
    id, and apart from them the blocks it has only located (a scan_term snippet)."""

    def __init__(self) -> None:
        self._seen: dict[str, list[str]] = {}  # read: valid evidence
        self._located: dict[str, list[str]] = {}  # located only, not (yet) read

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, citation: str) -> bool:
        """Whether the model read this block's full text: only then is it evidence."""
        return citation in self._seen

    def located(self, citation: str) -> bool:
        """Whether the model saw this block only as a scan_term snippet."""
        return citation in self._located and citation not in self._seen

    def add(self, doc_id: str, block_id: str, tool: str) -> None:
        """A block whose full text `tool` returned."""
        tools = self._seen.setdefault(f"{doc_id}#{block_id}", [])
        if tool not in tools:
            tools.append(tool)

    def add_located(self, doc_id: str, block_id: str, tool: str) -> None:
        """A block `tool` only pointed at (a snippet of it)."""
        tools = self._located.setdefault(f"{doc_id}#{block_id}", [])
        if tool not in tools:
            tools.append(tool)

    def add_returned(self, tool: str, result: ToolResult) -> int:
        """Register the blocks a tool result returns: read (`blocks`) or located (`hits`);
        how many blocks it names."""
        read = cited_refs(result)
        for doc_id, block_id in read:
            self.add(doc_id, block_id, tool)
        located = located_refs(result)
        for doc_id, block_id in located:
            self.add_located(doc_id, block_id, tool)
        return len(read) + len(located)

    def add_result(self, tool: str, payload: bytes) -> int:
        """`add_returned` for a result as JSON (a front end replaying ToolCallFinished
        events); a payload that is not one of `tool`'s results adds nothing."""
        result = read_result(tool, payload)
        return 0 if result is None else self.add_returned(tool, result)

    def tools(self, citation: str) -> tuple[str, ...]:
        """The tools that returned the block, those that showed its text first."""
        both = [*self._seen.get(citation, ()), *self._located.get(citation, ())]
        return tuple(dict.fromkeys(both))


def _items(inner: str) -> Iterable[str]:
    return (item for item in _SPLIT.split(inner) if item)


def cited(answer: str) -> list[tuple[str, int]]:
    """(citation, occurrences) in order of first appearance."""
    counts: dict[str, int] = {}
    for m in MARKER.finditer(answer):
        for item in _items(m.group(1)):
            counts[item] = counts.get(item, 0) + 1
    return list(counts.items())


def resolve(answer: str, evidence: Evidence, snapshot: Snapshot) -> list[Citation]:
    """Every citation of `answer`, checked and (when valid) resolved on `snapshot`."""
    out: list[Citation] = []
    for index, (item, n) in enumerate(cited(answer), start=1):
        doc_id, sep, block_id = item.partition("#")
        problem: Problem | None = (
            "malformed"
            if not sep or not doc_id or not block_id
            else "located_not_read"
            if evidence.located(item)
            else "not_returned"
            if item not in evidence
            else None
        )
        if problem == "located_not_read":
            out.append(_resolved(index, item, doc_id, block_id, n, evidence, snapshot, problem))
            continue
        if problem is not None:
            out.append(
                Citation(
                    index=index,
                    citation=item,
                    doc_id=doc_id,
                    block_id=block_id,
                    valid=False,
                    problem=problem,
                    occurrences=n,
                )
            )
            continue
        out.append(_resolved(index, item, doc_id, block_id, n, evidence, snapshot))
    return out


def _resolved(
    index: int,
    item: str,
    doc_id: str,
    block_id: str,
    n: int,
    evidence: Evidence,
    snapshot: Snapshot,
    located: Problem | None = None,
) -> Citation:
    """A citation resolved on the snapshot: valid evidence, or (`located`) a block that is
    shown where it is but flagged as not read."""
    ordinal = snapshot.block_ordinal(doc_id, block_id)
    if ordinal is None:
        return Citation(
            index=index,
            citation=item,
            doc_id=doc_id,
            block_id=block_id,
            valid=False,
            problem="not_in_snapshot",
            occurrences=n,
            returned_by=evidence.tools(item),
        )
    block = snapshot.block(ordinal)
    doc = snapshot.documents[block.doc]
    section = doc.sections[block.section] if 0 <= block.section < len(doc.sections) else None
    labels = snapshot.page_labels(block.doc) if block.page_start is not None else ()
    return Citation(
        index=index,
        citation=item,
        doc_id=doc_id,
        block_id=block_id,
        valid=located is None,
        problem=located,
        occurrences=n,
        returned_by=evidence.tools(item),
        title=doc.title,
        source_label=doc.source_label,
        section_path=section.path if section else "",
        section_title=section.title if section else "",
        page_start=block.page_start,
        page_end=block.page_end,
        page_label_start=_printed(labels, block.page_start),
        page_label_end=_printed(labels, block.page_end),
        preview=preview(block.text),
    )


def _printed(labels: tuple[str, ...], page: int | None) -> str:
    """The label printed on 1-based `page`, "" when the PDF prints none there."""
    return labels[page - 1] if page is not None and 1 <= page <= len(labels) else ""


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class MarkerNumbers:
    """Rewrites markers in streamed answer text as `[n]` (`[n?]` when not verifiable),
    numbered like `resolve` numbers them; an unfinished marker is held back."""

    def __init__(self, evidence: Evidence) -> None:
        self._evidence = evidence
        self._numbers: dict[str, int] = {}
        self._pending = ""

    def _number(self, inner: str) -> str:
        labels = []
        for item in _items(inner):
            n = self._numbers.setdefault(item, len(self._numbers) + 1)
            labels.append(f"[{n}]" if item in self._evidence else f"[{n}?]")
        return "".join(labels)

    def feed(self, text: str) -> str:
        buf = self._pending + text
        self._pending = ""
        out: list[str] = []
        pos = 0
        while True:
            start = buf.find("【", pos)
            if start < 0:
                out.append(buf[pos:])
                break
            out.append(buf[pos:start])
            m = MARKER.match(buf, start)
            if m is not None:
                out.append(self._number(m.group(1)))
                pos = m.end()
                continue
            end = buf.find("】", start)
            if end < 0 and len(buf) - start < _MAX_MARKER:
                self._pending = buf[start:]
                break
            out.append("【")  # not a citation marker: pass it through
            pos = start + 1
        return "".join(out)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return rest
