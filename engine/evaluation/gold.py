"""The gold question set (JSON Lines, ../shared/corpus/GOLD-FORMAT.md): loading, validation
with the line and field named, and the quote normalisation every check shares.

A gold set is read-only input: nothing here ever writes it, and an invalid line stops the
load (an evaluation of a half-read gold set would report figures about other questions). A
line of a kind this version does not know is valid JSON Lines all the same: it is kept aside
as skipped (and reported), never scored and never fatal. Every file GOLD-FORMAT.md allows
loads; coverage questions may carry expected_sections without evidence quotes.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from engine.errors import GoldError

Kind = Literal[
    "fact",
    "paraphrase",
    "cross_lingual",
    "coverage",
    "scan",
    "compare",
    "absent",
    "out_of_scope",
]
KINDS: tuple[Kind, ...] = (
    "fact",
    "paraphrase",
    "cross_lingual",
    "coverage",
    "scan",
    "compare",
    "absent",
    "out_of_scope",
)
DECLINED_KINDS: frozenset[Kind] = frozenset({"absent", "out_of_scope"})
QUOTE_CHARS = (15, 60)  # GOLD-FORMAT.md: quotes are 15–60 characters long


class GoldEvidence(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    document: str  # path relative to the corpus docs/ folder = the snapshot's source_label
    section: str = ""
    page: int | None = None  # 1-based physical PDF page, None for other formats
    quote: str


class GoldItem(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    lang: Literal["en", "zh"]
    kind: Kind
    question: str
    documents: tuple[str, ...] = ()
    evidence: tuple[GoldEvidence, ...] = ()
    expected_sections: tuple[str, ...] = ()
    term: str | None = None
    min_count: int | None = None
    # Each entry is one required fact; a list entry names variants of it (any one counts).
    answer_must_include: tuple[str | tuple[str, ...], ...] = ()
    notes: str = ""

    @property
    def is_retrieval(self) -> bool:
        """Whether recall applies: the question has evidence to find (SPEC §15)."""
        return bool(self.evidence) and self.kind not in DECLINED_KINDS

    def facts(self) -> list[tuple[str, ...]]:
        """answer_must_include as variant tuples."""
        return [(f,) if isinstance(f, str) else f for f in self.answer_must_include]


class SkippedItem(msgspec.Struct, frozen=True, kw_only=True):
    """A gold line of a kind this version does not know: reported, never scored."""

    line: int
    id: str
    kind: str


class GoldSet(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    sha256: str  # of the file's bytes: part of every result's identity
    items: tuple[GoldItem, ...]
    skipped: tuple[SkippedItem, ...] = ()  # unknown kinds, in file order

    def by_id(self) -> dict[str, GoldItem]:
        return {i.id: i for i in self.items}


def normalize(text: str) -> str:
    """GOLD-FORMAT.md's match rule: Unicode NFC, casefold, every whitespace character removed."""
    return "".join(unicodedata.normalize("NFC", text).casefold().split())


_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "＂": '"', "＇": "'"})


def normalize_answer(text: str) -> str:
    """`normalize` plus typographic quotes folded to ASCII ones: an answer that writes "Can't"
    states the heading "Can’t" (used for answer checks only, never for evidence quotes)."""
    return normalize(text.translate(_APOSTROPHES))


def contains_quote(block_text: str, quotes: Iterable[str]) -> bool:
    """Whether a block holds any of the (already normalised) quotes."""
    folded = normalize(block_text)
    return any(q in folded for q in quotes)


class _Head(msgspec.Struct, frozen=True):
    """What a line must have whatever its kind."""

    id: str
    kind: str


_decoder = msgspec.json.Decoder(GoldItem)
_head_decoder = msgspec.json.Decoder(_Head)
_ID = re.compile(r"^\S{1,100}$")


def parse_gold(data: bytes, path: str = "<gold>") -> GoldSet:
    """Validate every line; the first problem raises GoldError naming its line."""
    items: list[GoldItem] = []
    skipped: list[SkippedItem] = []
    seen: dict[str, int] = {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise GoldError(f"{path} is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            head = _head_decoder.decode(line)
            if head.kind not in KINDS:
                if head.id in seen:
                    raise GoldError(
                        f"{where}: id {head.id!r} is already used on line {seen[head.id]}"
                    )
                seen[head.id] = number
                skipped.append(SkippedItem(line=number, id=head.id, kind=head.kind))
                continue
            item = _decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise GoldError(f"{where}: {exc}") from None
        problem = _problem(item)
        if problem:
            raise GoldError(f"{where} ({item.id}): {problem}")
        if item.id in seen:
            raise GoldError(f"{where}: id {item.id!r} is already used on line {seen[item.id]}")
        seen[item.id] = number
        items.append(item)
    if not items:
        unknown = f" of a known kind ({len(skipped)} of unknown kinds)" if skipped else ""
        raise GoldError(f"{path} holds no questions{unknown}")
    return GoldSet(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        items=tuple(items),
        skipped=tuple(skipped),
    )


def skipped_note(gold: GoldSet) -> str | None:
    """The report's sentence about lines of unknown kinds, None when there are none."""
    if not gold.skipped:
        return None
    listed = ", ".join(f"{s.id} ({s.kind!r}, line {s.line})" for s in gold.skipped[:10])
    more = f" and {len(gold.skipped) - 10} more" if len(gold.skipped) > 10 else ""
    return (
        f"{len(gold.skipped)} gold question(s) of a kind this version does not score were "
        f"skipped: {listed}{more}; known kinds: {', '.join(KINDS)}"
    )


def load_gold(path: Path) -> GoldSet:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GoldError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_gold(data, str(path))


def _problem(item: GoldItem) -> str | None:
    """What is wrong with one item beyond its types, or None."""
    if not _ID.match(item.id):
        return "id must be 1–100 characters without spaces"
    if not item.question.strip():
        return "question is empty"
    low, high = QUOTE_CHARS
    for n, ev in enumerate(item.evidence):
        if not low <= len(ev.quote) <= high:
            return f"evidence[{n}].quote has {len(ev.quote)} characters, not {low}–{high}"
        if not normalize(ev.quote):
            return f"evidence[{n}].quote is blank"
        if ev.page is not None and ev.page < 1:
            return f"evidence[{n}].page must be 1 or more (or null)"
        if ev.document not in item.documents:
            return f"evidence[{n}].document {ev.document!r} is not among documents"
    for n, fact in enumerate(item.answer_must_include):
        variants = (fact,) if isinstance(fact, str) else fact
        if not variants or not all(normalize(v) for v in variants):
            return f"answer_must_include[{n}] is empty"
    if item.kind == "scan":
        if not item.term or not item.term.strip():
            return "a scan question needs a term"
        if item.min_count is None or item.min_count < 1:
            return "a scan question needs min_count of 1 or more"
        if not item.documents:
            return "a scan question names the documents to scan"
    elif item.term is not None or item.min_count is not None:
        return "term and min_count belong to scan questions only"
    if item.kind == "coverage" and not item.expected_sections:
        return "a coverage question lists its expected_sections"
    if item.kind in DECLINED_KINDS and (item.evidence or item.answer_must_include):
        return f"an {item.kind} question has no evidence and no required facts"
    if item.kind == "out_of_scope" and item.documents:
        return "an out_of_scope question names no documents"
    # A coverage question is scored on expected_sections; its evidence quotes are optional.
    if item.kind not in (*DECLINED_KINDS, "scan", "coverage") and not item.evidence:
        return f"a {item.kind} question needs evidence"
    return None
