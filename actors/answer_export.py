"""An answer, or a whole conversation, as Markdown to keep: each question, its answer with the
citation markers shown as [n], and under it the sources those numbers stand for, resolved to
title · section · page and the quoted passage.

The Markdown is built by pure functions: the words come from the caller (the UI language),
the citations from the snapshot each answer used (`export_conversation` looks them up). Never a
raw block id, never anything but the questions, the answers and their sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack

import msgspec

from actors.catalog import Catalog
from actors.conversations import ConversationTurn
from actors.errors import AppError
from actors.history import history_citations, numbered
from engine.harness import Citation

PATH_SEPARATOR = " / "
QUOTE_CHARS = 600  # a passage longer than this is cut, with an ellipsis


@dataclass(frozen=True)
class ExportLabels:
    """The export's words in the UI language; `page`/`pages` take {page} / {start} {end},
    `no_answer` takes {reason}."""

    sources: str = "Sources"
    unverified: str = "unverified source (not among the blocks retrieved for this answer)"
    page: str = "p. {page}"
    pages: str = "pp. {start}–{end}"
    no_answer: str = "No answer ({reason})."


class ExportedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """One question with its answer already numbered ([n]) and its resolved citations."""

    question: str
    answer: str | None  # None: the request ended without an answer
    citations: tuple[Citation, ...] = ()
    termination_reason: str = "finished"
    meta: str = ""  # one line under the answer: when, cost, tokens (already in words)


_NUMBER = re.compile(r"\[(\d+)\]")


def mark_unverified(text: str, citations: Sequence[Citation]) -> str:
    """An answer numbered [n] with the unverifiable citations shown as [n?], as their
    sources are (and as the live answer showed them)."""
    bad = {c.index for c in citations if not c.valid}
    if not bad:
        return text
    return _NUMBER.sub(lambda m: f"[{m[1]}?]" if int(m[1]) in bad else m[0], text)


def citation_label(c: Citation, labels: ExportLabels) -> str:
    """title · section · page, the way the ask page's chips say it."""
    if not c.valid:
        return labels.unverified
    parts = [c.title or c.source_label]
    section = c.section_path or c.section_title
    if c.title and section.startswith(c.title + PATH_SEPARATOR):
        section = section[len(c.title + PATH_SEPARATOR) :]
    if section and section != c.title:
        parts.append(section)
    shown = c.pages_shown()  # as printed in the book
    if shown is not None:
        first, last = shown
        if first == last:
            parts.append(labels.page.format(page=first))
        else:
            parts.append(labels.pages.format(start=first, end=last))
    return " · ".join(p for p in parts if p)


def _quote(text: str) -> list[str]:
    text = " ".join(text.split())
    if len(text) > QUOTE_CHARS:
        text = text[:QUOTE_CHARS].rstrip() + "…"
    return [f"  > {text}"] if text else []


def turn_markdown(turn: ExportedTurn, labels: ExportLabels, heading: str = "##") -> str:
    """One question and its answer, with its sources below."""
    question = " ".join(turn.question.split())
    lines = [f"{heading} {question}", ""]
    if turn.answer is None:
        lines += [f"*{labels.no_answer.format(reason=turn.termination_reason)}*", ""]
    else:
        lines += [turn.answer.strip(), ""]
    if turn.citations:
        lines += [f"**{labels.sources}**", ""]
        for c in sorted(turn.citations, key=lambda c: c.index):
            mark = f"[{c.index}]" if c.valid else f"[{c.index}?]"
            lines.append(f"- **{mark}** {citation_label(c, labels)}")
            if c.valid:
                lines += _quote(c.preview)
        lines.append("")
    if turn.meta:
        lines += [f"*{turn.meta}*", ""]
    return "\n".join(lines)


def conversation_markdown(
    turns: Sequence[ExportedTurn], labels: ExportLabels, title: str | None = None
) -> str:
    """A whole conversation, oldest question first, under `title` when one is given."""
    body = "\n---\n\n".join(turn_markdown(t, labels) for t in turns)
    head = f"# {' '.join(title.split())}\n\n" if title else ""
    return (head + body).rstrip() + "\n"


def export_name(question: str, created_at: str) -> str:
    """A file name for the export: the day and the question's first words (letters and
    digits of any script; nothing a file system refuses)."""
    words = "".join(ch if ch.isalnum() else "-" for ch in question.strip()[:40])
    words = "-".join(w for w in words.split("-") if w)
    day = "".join(ch for ch in created_at[:10] if ch.isdigit() or ch == "-")
    return "-".join(p for p in ("citewise", day, words) if p) + ".md"


class ExportOptions(TypedDict, total=False):
    request_id: str  # only this answer
    title: str  # a heading above the conversation
    meta: Callable[[ConversationTurn], str]  # the line under each answer


def export_conversation(
    catalog: Catalog,
    turns: Sequence[ConversationTurn],
    labels: ExportLabels,
    **how: Unpack[ExportOptions],
) -> str:
    """The recorded `turns` as Markdown (only the one of `request_id` when given), each
    answer's citations resolved again in the snapshot it used."""
    request_id, title, meta = how.get("request_id"), how.get("title"), how.get("meta")
    if request_id is not None:
        turns = [t for t in turns if t.request_id == request_id]
    if not turns:
        raise AppError(
            "there is no recorded answer to export; ask the question first",
            code="nothing_to_export",
        )
    exported = []
    for t in turns:
        citations = (
            () if t.answer is None else tuple(history_citations(catalog, t.answer, t.snapshot_id))
        )
        exported.append(
            ExportedTurn(
                question=t.question,
                answer=None if t.answer is None else mark_unverified(numbered(t.answer), citations),
                citations=citations,
                termination_reason=t.termination_reason,
                meta=meta(t) if meta is not None else "",
            )
        )
    if request_id is not None and title is None:
        return turn_markdown(exported[0], labels, heading="#").rstrip() + "\n"
    return conversation_markdown(exported, labels, title=title)
