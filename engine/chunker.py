"""The chunker: turns a ParsedDocument into a DocumentRecord (outline + blocks).

Blocks pack whole paragraphs up to a token target, never cross a section boundary, split long
paragraphs only at sentence ends (Chinese 。！？；…, English . ! ? before whitespace, never at a
space inside Chinese) and over-long sentences only at token boundaries. It never reads files
and never drops or reorders text: the blocks of a section are its paragraphs, in order.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate

# Still imported from here by actors/ingest.py.
from engine.errors import ChunkError as ChunkError
from engine.import_report import import_report
from engine.parsing.model import LineBox, ParsedDocument, ParsedSection, unique_paths
from engine.tokens import TokenCounter
from index.records import BlockRecord, DocumentRecord, PageRect, SectionRecord

CHUNKER_VERSION = "chunk-1"
FIRST_SENTENCE_MAX_CHARS = 200
PARAGRAPH_JOINER = "\n\n"

_CLOSERS = "\"'”’」』）)】》〉\\]"
_ZH_ENDS = "。．｡！？；…⋯"
# A sentence ends after Chinese terminators (no space needed) or after . ! ? followed by
# whitespace; closing quotes and brackets and the following whitespace stay with the sentence.
# That is `[ZH]+[CLOSERS]*\s*|[.!?]+[CLOSERS]*\s+`, written to open with the class of every
# terminator: re then skips to the next one in C instead of trying both branches at every
# character (the branch is chosen by the terminator just taken; the two sets share none).
_SENTENCE_END = re.compile(
    rf"[{_ZH_ENDS}.!?](?:(?<=[{_ZH_ENDS}])[{_ZH_ENDS}]*[{_CLOSERS}]*\s*"
    rf"|(?<=[.!?])[.!?]*[{_CLOSERS}]*\s+)",
)
# Words whose trailing dot is not a sentence end.
_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "cf.", "vs.", "mr.", "mrs.", "ms.", "dr.", "fig."})
_NUMBERING = re.compile(r"^(?:\d+|[A-Za-z])(?:\.\d+)*\.$")
_HEX = re.compile(r"^[0-9a-f]{12,}$")


def chunker_version(target_tokens: int) -> str:
    """The version recorded in a DocumentRecord: the algorithm and its target size.

    Both change the blocks, so both belong in every content-addressed key and in block ids.
    """
    return f"{CHUNKER_VERSION}/t{target_tokens}"


def doc_id_for(content_hash: str) -> str:
    """A document's id: stable for the same bytes, whatever the file is called."""
    return "d" + content_hash[:12]


def block_id_for(version: str, content_hash: str, block_index: int) -> str:
    """A block's id: stable for the same document bytes and chunker version."""
    key = f"{version}\0{content_hash}\0{block_index}".encode()
    return hashlib.blake2b(key, digest_size=5).hexdigest()


def sentence_ends(text: str) -> list[int]:
    """End offsets (exclusive) of the sentences of `text`; the last one is always len(text).

    The sentences partition the text exactly: whitespace after a terminator belongs to the
    sentence it ends.
    """
    ends: list[int] = []
    n = len(text)
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        if end >= n:
            break
        start = m.start()
        if text[start] == "." and _is_abbreviation(text, start):
            continue
        ends.append(end)
    ends.append(n)
    return ends


def _is_abbreviation(text: str, dot: int) -> bool:
    """An abbreviation ("e.g."), or a list or heading number ("3.", "10.3.4.") opening a line."""
    word_start = dot
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start : dot + 1]
    if word.casefold() in _ABBREVIATIONS:
        return True
    line_start = text.rfind("\n", 0, word_start) + 1
    return _NUMBERING.match(word) is not None and not text[line_start:word_start].strip()


def first_sentence(text: str, max_chars: int = FIRST_SENTENCE_MAX_CHARS) -> str:
    """The first sentence of `text`, whitespace collapsed, at most `max_chars` characters."""
    sentence = " ".join(text[: sentence_ends(text)[0]].split())
    if len(sentence) > max_chars:
        sentence = sentence[: max_chars - 1].rstrip() + "…"
    return sentence


@dataclass(slots=True)
class _Piece:
    """A run of one paragraph's text that is never split further."""

    text: str
    tokens: int  # exact for a whole paragraph, estimated for a sentence or window
    paragraph: int  # document-wide paragraph number, to know where a paragraph break goes
    page: int | None
    heading: bool
    whole: bool = True  # the whole paragraph, not a sentence or window of it
    lines: tuple[LineBox, ...] = ()  # the printed lines this piece is on (PDF)


@dataclass(slots=True)
class _Paragraph:
    text: str
    page: int | None
    heading: bool
    lines: tuple[LineBox, ...] = ()


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _is_heading_line(text: str, title: str) -> bool:
    """Whether a section's first paragraph is its heading as printed ("1.2. Title", "## Title")."""
    line, heading = _collapse(text), _collapse(title)
    if not heading or "\n" in text:
        return False
    return line == heading or (heading in line and len(line) <= len(heading) + 24)


def _paragraphs(section: ParsedSection) -> list[_Paragraph]:
    out: list[_Paragraph] = []
    for p in section.paragraphs:
        text = p.text.strip()
        if text:
            heading = not out and _is_heading_line(text, section.title)
            out.append(_Paragraph(text, p.page, heading, p.lines))
    return out


def _split_sentences(text: str, starts: list[int], target: int) -> list[tuple[str, int]]:
    """A paragraph longer than the target, as sentences with token counts; a sentence longer
    than twice the target is cut further into windows of about `target` tokens."""
    pieces: list[tuple[str, int]] = []
    begin = 0
    for end in sentence_ends(text):
        first, last = bisect_left(starts, begin), bisect_left(starts, end)
        if last - first > 2 * target:
            pieces.extend(_token_windows(text, starts, begin, end, first, last, target))
        else:
            pieces.append((text[begin:end], max(1, last - first)))
        begin = end
    return pieces


def _line_break_at(text: str, at: int) -> bool:
    return at > 0 and "\n" in (text[at - 1], text[at])


def _word_break_at(text: str, at: int) -> bool:
    return at > 0 and text[at].isspace() and text[at - 1].isascii() and text[at - 1].isalnum()


def _token_windows(
    text: str, starts: list[int], begin: int, end: int, first: int, last: int, target: int
) -> list[tuple[str, int]]:
    """Cut text[begin:end] (tokens first..last-1) at token starts, preferring a line break,
    then a space between Latin words, within the last quarter of each window; what is left
    at the end is never shorter than a quarter window."""
    cuts = [first]  # token indices where windows start
    while last - cuts[-1] > target + target // 4:
        cut = cuts[-1] + target
        lower = max(cut - target // 4, cuts[-1] + 1)
        at_line = [j for j in range(cut, lower - 1, -1) if _line_break_at(text, starts[j])]
        at_word = [j for j in range(cut, lower - 1, -1) if _word_break_at(text, starts[j])]
        cut = (at_line or at_word or [cut])[0]
        if starts[cut] <= starts[cuts[-1]]:  # several tokens share one character: move on
            while cut < last and starts[cut] <= starts[cuts[-1]]:
                cut += 1
            if cut >= last:
                break
        cuts.append(cut)
    windows: list[tuple[str, int]] = []
    for i, cut in enumerate(cuts):
        lo = begin if i == 0 else starts[cut]
        nxt = cuts[i + 1] if i + 1 < len(cuts) else last
        hi = end if i + 1 == len(cuts) else starts[nxt]
        windows.append((text[lo:hi], nxt - cut))
    return windows


def _pack(pieces: list[_Piece], target: int) -> list[list[_Piece]]:
    """Greedy packing of one section's pieces into blocks of at most `target` tokens.

    A block that holds only the heading (or a few tokens) takes the next piece even past the
    target (up to twice it), so a heading stays with its body; a short last block joins the one
    before it when the two together stay within twice the target.
    """
    small = max(8, target // 8)
    blocks: list[list[_Piece]] = []
    cur: list[_Piece] = []
    cur_tokens = 0
    for piece in pieces:
        sep = 1 if cur and cur[-1].paragraph != piece.paragraph else 0
        if cur:
            size = cur_tokens + sep + piece.tokens
            tiny = cur_tokens < small or all(p.heading for p in cur)
            if size > target and not (tiny and size <= 2 * target):
                blocks.append(cur)
                cur, cur_tokens, sep = [], 0, 0
        cur.append(piece)
        cur_tokens += sep + piece.tokens
    if cur:
        if blocks and cur_tokens < target // 4:
            previous = sum(p.tokens for p in blocks[-1]) + 1
            if previous + cur_tokens <= 2 * target:
                blocks[-1].extend(cur)
                cur = []
        if cur:
            blocks.append(cur)
    return blocks


def _block_text(pieces: list[_Piece]) -> str:
    parts: list[str] = []
    for i, piece in enumerate(pieces):
        if i and pieces[i - 1].paragraph != piece.paragraph:
            parts[-1] = parts[-1].rstrip()
            parts.append(PARAGRAPH_JOINER)
        parts.append(piece.text)
    return "".join(parts).strip()


def _exact_counts(blocks: list[list[_Piece]], texts: list[str], counter: TokenCounter) -> list[int]:
    """The exact token count of every block text without encoding the blocks again.

    A block of whole paragraphs is their counts plus what each paragraph break adds (only
    each paragraph's last word is encoded for that); a block holding part of a paragraph is
    encoded whole.
    """
    exact = [0] * len(blocks)
    breaks: list[str] = []  # every paragraph followed by a break, block by block
    joined: list[int] = []
    recount: list[int] = []
    for i, pieces in enumerate(blocks):
        if all(p.whole for p in pieces):
            exact[i] = sum(p.tokens for p in pieces)
            breaks.extend(p.text for p in pieces[:-1])
            joined.append(i)
        else:
            recount.append(i)
    increments = iter(counter.break_increments(breaks, PARAGRAPH_JOINER))
    for i in joined:
        for _ in range(len(blocks[i]) - 1):
            exact[i] += next(increments)
    for i, n in zip(recount, counter.count_many([texts[i] for i in recount]), strict=True):
        exact[i] = n
    return exact


class _PrintedLines:
    """Which printed lines hold which characters of one paragraph, for its sentences.

    Line lengths come from the page and the paragraph's text may differ by a joined hyphen or
    space per line, so offsets are scaled to the text; a line counts when it holds more than
    one character of a range (a sentence ending just after a line break stays off it). The
    line offsets are laid out once per paragraph and each range is found by bisection: a
    paragraph of n lines cut into s sentences costs O(n + s log n), not O(n * s)."""

    __slots__ = ("_his", "_lines", "_los")

    def __init__(self, lines: tuple[LineBox, ...], length: int) -> None:
        total = sum(line[4] for line in lines)
        self._lines = lines if lines and total > 0 else ()
        scale = length / total if self._lines else 0.0
        ends = list(accumulate(line[4] for line in self._lines))
        self._his = [at * scale for at in ends]
        self._los = [(at - line[4]) * scale for at, line in zip(ends, self._lines, strict=True)]

    def of(self, begin: int, end: int) -> tuple[LineBox, ...]:
        """The lines holding characters [begin, end): those sharing more than one character
        with it, else the line sharing the most (the first, on a tie)."""
        lines, los, his = self._lines, self._los, self._his
        if not lines:
            return ()
        # Lines before `first` end at or before `begin`; those from `stop` on start at or
        # after `end`: neither shares a character, and the nearer each is, the less it misses
        # by. So only the lines between, the nearest on each side and the first line tied
        # with the nearest on the left can be the answer.
        first = bisect_right(his, begin)
        stop = max(first, bisect_left(los, end))
        candidates = list(range(first, min(stop + 1, len(lines))))
        if first:
            candidates.insert(0, bisect_left(his, his[first - 1]))
        chosen: list[LineBox] = []
        best, best_overlap = lines[0], -1.0
        for i in candidates:
            overlap = min(his[i], end) - max(los[i], begin)
            if overlap > 1.0:
                chosen.append(lines[i])
            if overlap > best_overlap:
                best, best_overlap = lines[i], overlap
        return tuple(chosen) or (best,)


def _rects(pieces: list[_Piece]) -> tuple[PageRect, ...]:
    """A block's rectangles, page by page in reading order: its lines, with lines of equal
    left and right edges that follow each other merged (a justified paragraph is one box)."""
    out: list[PageRect] = []
    for piece in pieces:
        if piece.page is None:
            continue
        for x0, y0, x1, y1, _ in piece.lines:
            rect = (piece.page, x0, y0, x1, y1)
            if out:
                page, px0, py0, px1, py1 = out[-1]
                if rect == out[-1] or (
                    page == piece.page and px0 <= x0 and x1 <= px1 and py0 <= y0 and y1 <= py1
                ):
                    continue  # the same line (a paragraph cut mid-line into two pieces)
                height = min(py1 - py0, y1 - y0)
                if (
                    page == piece.page
                    and abs(px0 - x0) <= 1.0
                    and abs(px1 - x1) <= 1.0
                    and -0.5 * height <= y0 - py1 <= 0.6 * height
                ):
                    out[-1] = (page, min(px0, x0), py0, max(px1, x1), max(py1, y1))
                    continue
            out.append(rect)
    return tuple(out)


def _ocr_confidence(pieces: list[_Piece], ocr_pages: dict[int, float]) -> float | None:
    """The lowest OCR confidence of the scanned pages a block's text is on (paragraphs never
    span pages, so a page tells where its text came from); None for text-layer text."""
    found = [ocr_pages[p.page] for p in pieces if p.page is not None and p.page in ocr_pages]
    return min(found) if found else None


def _page_range(pieces: list[_Piece]) -> tuple[int | None, int | None]:
    pages = [p.page for p in pieces if p.page is not None]
    return (min(pages), max(pages)) if pages else (None, None)


def _outline(depths: list[int]) -> tuple[list[int], list[int]]:
    """Parent ordinals and normalised depths (a child is always its parent's depth + 1),
    using the same stack rule as unique_paths."""
    parents: list[int] = []
    levels: list[int] = []
    stack: list[tuple[int, int]] = []  # (raw depth, ordinal)
    for ordinal, depth in enumerate(depths):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else -1
        parents.append(parent)
        levels.append(levels[parent] + 1 if parent >= 0 else 1)
        stack.append((depth, ordinal))
    return parents, levels


def chunk_document(
    parsed: ParsedDocument,
    *,
    content_hash: str,
    source: str,
    source_label: str,
    parser_version: str,
    target_tokens: int,
    counter: TokenCounter,
    parse_seconds: float | None = None,
) -> DocumentRecord:
    """Outline and blocks of one parsed document; deterministic for the same inputs.
    `parse_seconds`, how long reading it took, goes into its import report.

    Raises ChunkError("no_text") when the document has no text at all.
    """
    if target_tokens < 1:
        raise ValueError(f"target_tokens must be positive, not {target_tokens}")
    content_hash = content_hash.lower()
    if not _HEX.match(content_hash):
        raise ValueError("content_hash must be a hex digest of at least 12 characters")
    version = chunker_version(target_tokens)

    per_section = [_paragraphs(s) for s in parsed.sections]
    flat = [p for paragraphs in per_section for p in paragraphs]
    if not flat:
        raise ChunkError("no_text", "the document contains no text to import")
    counts = counter.count_many([p.text for p in flat])
    long_ones = [i for i, n in enumerate(counts) if n > target_tokens]
    starts = dict(
        zip(long_ones, counter.token_starts_many([flat[i].text for i in long_ones]), strict=True)
    )

    section_blocks: list[list[list[_Piece]]] = []
    number = 0
    for paragraphs in per_section:
        pieces: list[_Piece] = []
        for p in paragraphs:
            if number in starts:
                at = 0
                printed = _PrintedLines(p.lines, len(p.text))
                for text, tokens in _split_sentences(p.text, starts[number], target_tokens):
                    lines = printed.of(at, at + len(text))
                    at += len(text)
                    pieces.append(
                        _Piece(text, tokens, number, p.page, p.heading, whole=False, lines=lines)
                    )
            else:
                pieces.append(
                    _Piece(p.text, counts[number], number, p.page, p.heading, lines=p.lines)
                )
            number += 1
        section_blocks.append(_pack(pieces, target_tokens))

    packed_blocks = [b for blocks in section_blocks for b in blocks]
    ocr_pages = dict(parsed.ocr_pages)
    texts = [_block_text(b) for b in packed_blocks]
    exact = _exact_counts(packed_blocks, texts, counter)
    blocks: list[BlockRecord] = []
    direct_blocks = [0] * len(parsed.sections)
    direct_tokens = [0] * len(parsed.sections)
    for ordinal, packed in enumerate(section_blocks):
        for pieces in packed:
            index = len(blocks)
            page_start, page_end = _page_range(pieces)
            blocks.append(
                BlockRecord(
                    block_index=index,
                    block_id=block_id_for(version, content_hash, index),
                    section=ordinal,
                    text=texts[index],
                    tokens=exact[index],
                    page_start=page_start,
                    page_end=page_end,
                    rects=_rects(pieces),
                    ocr_confidence=_ocr_confidence(pieces, ocr_pages),
                )
            )
            direct_blocks[ordinal] += 1
            direct_tokens[ordinal] += exact[index]

    titles = [s.title for s in parsed.sections]
    depths = [s.depth for s in parsed.sections]
    paths = unique_paths(titles, depths)
    parents, levels = _outline(depths)
    subtree_blocks = list(direct_blocks)
    subtree_tokens = list(direct_tokens)
    for ordinal in range(len(parsed.sections) - 1, -1, -1):
        parent = parents[ordinal]
        if parent >= 0:
            subtree_blocks[parent] += subtree_blocks[ordinal]
            subtree_tokens[parent] += subtree_tokens[ordinal]

    sections: list[SectionRecord] = []
    for ordinal, section in enumerate(parsed.sections):
        paragraphs = per_section[ordinal]
        body = next((p.text for p in paragraphs if not p.heading), "")
        page = section.page
        if page is None:
            page = next((p.page for p in paragraphs if p.page is not None), None)
        sections.append(
            SectionRecord(
                path=paths[ordinal],
                title=section.title,
                ordinal=ordinal,
                depth=levels[ordinal],
                parent=parents[ordinal],
                direct_blocks=direct_blocks[ordinal],
                subtree_blocks=subtree_blocks[ordinal],
                direct_tokens=direct_tokens[ordinal],
                subtree_tokens=subtree_tokens[ordinal],
                first_sentence=first_sentence(body) if body else "",
                page=page,
            )
        )

    return DocumentRecord(
        doc_id=doc_id_for(content_hash),
        content_hash=content_hash,
        source=source,
        source_label=source_label,
        title=parsed.title,
        lang=parsed.lang,
        format=parsed.format,
        pages=parsed.pages,
        page_labels=parsed.page_labels,
        parser_version=parser_version,
        chunker_version=version,
        sections=tuple(sections),
        blocks=tuple(blocks),
        report=import_report(parsed, parse_seconds),
    )
