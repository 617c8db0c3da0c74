"""The chunker: section-bound blocks, sentence-end splits (Chinese on 。 not spaces), pages,
stable ids and an outline whose counts add up — on hand-built documents and real corpus text."""

from __future__ import annotations

import hashlib
import itertools
import pickle
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.tokens.counter as tokens_module
from engine.chunker import CHUNKER_VERSION, FIRST_SENTENCE_MAX_CHARS, chunk_document, sentence_ends
from engine.errors import ChunkError
from engine.parsing.model import PATH_SEPARATOR, Paragraph, ParsedDocument, ParsedSection
from engine.tokens import TokenCounter
from index.records import DocumentRecord

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"
HASH = hashlib.sha256(b"a document").hexdigest()
COUNTER = TokenCounter()


def tokenizer_counts(texts: list[str]) -> list[int]:
    """Counts by DeepSeek's tokenizer itself, not by the counter the chunker uses."""
    return tokens_module._load().encode_counts(texts)


ENDS_ZH = "。！？；…"


def chunk(doc: ParsedDocument, target: int = 64, content_hash: str = HASH) -> DocumentRecord:
    return chunk_document(
        doc,
        content_hash=content_hash,
        source="books/a.txt",
        source_label="books/a.txt",
        parser_version="text-1",
        target_tokens=target,
        counter=COUNTER,
    )


def section(title: str, depth: int, *texts: str, page: int | None = None) -> ParsedSection:
    """A section whose first paragraph is its heading line, as parsers emit it."""
    return ParsedSection(
        title=title,
        depth=depth,
        paragraphs=tuple(Paragraph(t) for t in (title, *texts)),
        page=page,
    )


def document(*sections: ParsedSection, lang: str = "en") -> ParsedDocument:
    return ParsedDocument(title="A book", lang=lang, format="markdown", sections=sections)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def assert_sections_reconstruct(doc: ParsedDocument, record: DocumentRecord) -> None:
    """Every section's blocks are exactly its own paragraphs, in order, nothing else."""
    assert [b.block_index for b in record.blocks] == list(range(len(record.blocks)))
    assert [b.section for b in record.blocks] == sorted(b.section for b in record.blocks)
    for ordinal, parsed in enumerate(doc.sections):
        blocks = "".join(b.text for b in record.blocks if b.section == ordinal)
        assert squash(blocks) == squash("".join(p.text for p in parsed.paragraphs))


def words(n: int, stem: str) -> str:
    """English words of about `n` tokens (never more)."""
    text = " ".join(f"{stem}{i}" for i in range(n))
    while COUNTER.count(text) > n:
        text = text.rsplit(" ", 1)[0]
    return text


def zh_corpus_document() -> ParsedDocument:
    """debian-reference.zh-cn.txt: paragraphs split on blank lines, numbered headings
    ("1.2. 类 Unix 文件系统") open sections whose depth is their number of components."""
    text = (CORPUS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")
    heading = re.compile(r"^((?:\d+|[A-Z])(?:\.\d+)*)\.\s+\S.*$")
    sections: list[ParsedSection] = []
    title, depth, paragraphs = "Debian 参考手册", 1, [Paragraph("Debian 参考手册")]
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        m = heading.match(block)
        if m and "\n" not in block:
            sections.append(ParsedSection(title=title, depth=depth, paragraphs=tuple(paragraphs)))
            title, depth, paragraphs = block, m.group(1).count(".") + 1, []
        paragraphs.append(Paragraph(block))
    sections.append(ParsedSection(title=title, depth=depth, paragraphs=tuple(paragraphs)))
    return ParsedDocument(
        title="Debian 参考手册", lang="zh", format="text", sections=tuple(sections)
    )


@pytest.fixture(scope="module")
def zh_doc() -> ParsedDocument:
    return zh_corpus_document()


@pytest.fixture(scope="module")
def zh_record(zh_doc: ParsedDocument) -> DocumentRecord:
    return chunk(zh_doc, target=256)


# -- blocks follow sections -------------------------------------------------------------------


def test_blocks_never_cross_a_section_boundary_in_the_real_chinese_book(
    zh_doc: ParsedDocument, zh_record: DocumentRecord
) -> None:
    assert len(zh_doc.sections) > 300
    assert_sections_reconstruct(zh_doc, zh_record)
    assert {b.section for b in zh_record.blocks} == set(range(len(zh_doc.sections)))


def test_block_sizes_stay_within_twice_the_target_and_pack_tightly(
    zh_record: DocumentRecord,
) -> None:
    target = 256
    assert max(b.tokens for b in zh_record.blocks) <= 2 * target
    blocks = zh_record.blocks
    # Greedy packing: two neighbours in one section never fit together into one block.
    for a, b in itertools.pairwise(blocks):
        if a.section == b.section:
            assert a.tokens + b.tokens > target - 8, (a.text, b.text)
    sizes = sorted(b.tokens for b in blocks)
    assert sizes[len(sizes) // 2] > target // 3  # median: real packing, not one block a line


def test_block_tokens_are_exact_deepseek_counts(zh_record: DocumentRecord) -> None:
    sample = zh_record.blocks[::17]
    assert [b.tokens for b in sample] == tokenizer_counts([b.text for b in sample])


def test_blocks_of_many_short_paragraphs_have_exact_counts() -> None:
    # Paragraph breaks after punctuation merge into one token (".\n\n"), after words they do
    # not: blocks joined from dozens of paragraphs must still carry the tokenizer's count.
    endings = ["end.", "done:", "结束。", "42", "x = f(y);", "（注）", "see [1]", "ok!", "加速"]
    paragraphs = [f"Paragraph {i} says {endings[i % len(endings)]}" for i in range(300)]
    code = "\n".join(f"    run step{i} --flag" for i in range(6))
    doc = document(section("Mixed", 1, *paragraphs, code, "第二部分。"))
    record = chunk(doc, target=96)
    assert_sections_reconstruct(doc, record)
    assert all(b.text.count("\n\n") >= 5 for b in record.blocks[:-1])
    assert [b.tokens for b in record.blocks] == tokenizer_counts([b.text for b in record.blocks])


def test_heading_stays_in_the_block_with_its_body() -> None:
    body = words(62, "body")  # fits the target alone, but not together with the heading
    record = chunk(document(section("Installing packages", 1, body)), target=64)
    assert [b.text for b in record.blocks] == ["Installing packages\n\n" + body]


def test_sections_with_only_a_heading_keep_one_block() -> None:
    record = chunk(document(section("Part one", 1), section("Chapter", 2, "Some text here.")))
    assert [s.direct_blocks for s in record.sections] == [1, 1]
    assert record.blocks[0].text == "Part one"


# -- sentence splitting -----------------------------------------------------------------------


def test_long_chinese_paragraph_splits_after_sentence_punctuation_never_at_spaces() -> None:
    sentences = [
        f"第 {i} 步 使用 apt 命令 安装 软件包 并 检查 依赖 关系{'。！？；…'[i % 5]}"
        for i in range(80)
    ]
    paragraph = "".join(sentences)
    doc = document(section("软件包管理", 1, paragraph), lang="zh")
    record = chunk(doc, target=64)
    body_blocks = record.blocks
    assert len(body_blocks) > 5
    for block in body_blocks:
        assert block.text[-1] in ENDS_ZH, block.text[-12:]
        assert " " in block.text  # the spaces were kept, not used as cut points
    assert_sections_reconstruct(doc, record)


def test_long_english_paragraph_splits_after_sentence_ends() -> None:
    paragraph = " ".join(
        f"Sentence {i} explains how the resolver caches answers{'.!?'[i % 3]}" for i in range(80)
    )
    record = chunk(document(section("Resolver", 1, paragraph)), target=64)
    assert len(record.blocks) > 5
    for block in record.blocks:
        assert block.text[-1] in ".!?"


def test_sentence_ends_keep_punctuation_quotes_and_numbering() -> None:
    text = "他说：“好的。”然后走了！Really? Yes. See e.g. the FAQ.\n3. Next item"
    ends = sentence_ends(text)
    pieces = [text[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    assert pieces == [
        "他说：“好的。”",
        "然后走了！",
        "Really? ",
        "Yes. ",
        "See e.g. the FAQ.\n",
        "3. Next item",
    ]
    assert sentence_ends("中文 里面 的 空格 不是 句子 边界") == [
        len("中文 里面 的 空格 不是 句子 边界")
    ]


# The sentence-end rule as the chunker's docstring states it, written plainly.
_CLOSERS = "[\"'”’」』）)】》〉\\]]"
_PLAIN_SENTENCE_END = re.compile(rf"[。．｡！？；…⋯]+{_CLOSERS}*\s*|[.!?]+{_CLOSERS}*\s+")


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="。．｡！？；…⋯.!?\"'”’」』）)】》〉\\] \n\t\u3000aZ1中-eg", max_size=16))
def test_sentences_end_where_the_plain_rule_says(text: str) -> None:
    """Whatever mix of terminators, closing quotes and spaces: the ends are those of the
    plain rule (terminators, closers, then spaces), abbreviations and numbering aside."""
    plain = [m.end() for m in _PLAIN_SENTENCE_END.finditer(text) if m.end() < len(text)]
    ends = sentence_ends(text)
    assert ends[-1] == len(text)
    dotted = {m.end() for m in _PLAIN_SENTENCE_END.finditer(text) if text[m.start()] == "."}
    assert [e for e in plain if e not in dotted] == [e for e in ends[:-1] if e not in dotted]
    assert set(ends[:-1]) <= set(plain)


def test_sentence_far_longer_than_the_target_is_cut_by_token_windows() -> None:
    run_on = "，".join(f"第{i}项配置参数说明" for i in range(200))  # one huge sentence
    doc = document(section("参数", 1, run_on), lang="zh")
    record = chunk(doc, target=64)
    assert len(record.blocks) >= 8
    assert max(b.tokens for b in record.blocks) <= 2 * 64
    assert_sections_reconstruct(doc, record)  # no character lost or split in half


def test_token_windows_cut_between_words_and_at_line_ends() -> None:
    prose = " ".join(f"reconfigur{i % 7}ation{i}" for i in range(200))  # no sentence end
    code = "\n".join(f"const value{i} = require('module{i}')" for i in range(120))
    doc = document(section("Run-on", 1, prose), section("Code", 1, code))
    record = chunk(doc, target=64)
    assert_sections_reconstruct(doc, record)
    prose_words = set(prose.split())
    prose_blocks = [b.text for b in record.blocks if b.section == 0]
    code_blocks = [b.text for b in record.blocks if b.section == 1]
    assert len(prose_blocks) > 4 and len(code_blocks) > 4
    for text in prose_blocks:
        assert set(text.split()) - {"Run-on"} <= prose_words  # no word cut in half
    code_lines = set(code.splitlines())
    for text in code_blocks:
        assert set(text.splitlines()) - {"Code", ""} <= code_lines  # no line cut in half


def test_small_trailing_piece_merges_into_the_block_before_it() -> None:
    a, b, tail = words(50, "alpha"), words(60, "beta"), words(5, "tail")
    record = chunk(
        document(
            ParsedSection(
                title="S", depth=1, paragraphs=(Paragraph(a), Paragraph(b), Paragraph(tail))
            )
        ),
        target=64,
    )
    assert [blk.text for blk in record.blocks] == [a, b + "\n\n" + tail]


# -- pages, ids, determinism ------------------------------------------------------------------


def test_pdf_pages_are_kept_on_blocks_and_sections() -> None:
    long_page_text = " ".join(f"Line {i} of the manual." for i in range(40))
    doc = ParsedDocument(
        title="Manual",
        lang="en",
        format="pdf",
        pages=9,
        sections=(
            ParsedSection(
                title="Intro",
                depth=1,
                page=3,
                paragraphs=(
                    Paragraph("Intro", 3),
                    Paragraph(long_page_text, 3),
                    Paragraph(long_page_text, 4),
                    Paragraph("End.", 5),
                ),
            ),
            ParsedSection(title="Next", depth=1, paragraphs=(Paragraph("Next", 7),)),
        ),
    )
    record = chunk(doc, target=64)
    assert record.pages == 9
    assert record.blocks[0].page_start == 3
    assert record.blocks[-2].page_end == 5
    for blk in record.blocks:
        assert blk.page_start is not None and blk.page_end is not None
        assert blk.page_start <= blk.page_end
    assert [b.page_start for b in record.blocks] == sorted(b.page_start or 0 for b in record.blocks)
    assert [s.page for s in record.sections] == [3, 7]  # heading page, else first paragraph


def test_non_pdf_blocks_have_no_pages(zh_record: DocumentRecord) -> None:
    assert all(b.page_start is None and b.page_end is None for b in zh_record.blocks)


def test_same_input_gives_an_identical_record(
    zh_doc: ParsedDocument, zh_record: DocumentRecord
) -> None:
    again = chunk(zh_doc, target=256)
    assert msgspec.json.encode(again) == msgspec.json.encode(zh_record)


def test_ids_are_stable_and_follow_the_content_hash() -> None:
    doc = document(section("A", 1, "One. " * 40), section("B", 1, "Two."))
    first, second = chunk(doc), chunk(doc)
    other_hash = hashlib.sha256(b"another document").hexdigest()
    other = chunk(doc, content_hash=other_hash)
    other_target = chunk(doc, target=65)
    ids = [b.block_id for b in first.blocks]
    assert ids == [b.block_id for b in second.blocks]
    assert all(re.fullmatch(r"[0-9a-f]{10}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {b.block_id for b in other.blocks}
    assert not set(ids) & {b.block_id for b in other_target.blocks}
    assert first.doc_id == "d" + HASH[:12] and other.doc_id == "d" + other_hash[:12]
    assert first.chunker_version.startswith(CHUNKER_VERSION)
    assert first.chunker_version != other_target.chunker_version


# -- outline ----------------------------------------------------------------------------------


def test_subtree_counts_add_up_over_descendants(zh_record: DocumentRecord) -> None:
    sections = zh_record.sections
    children: dict[int, list[int]] = {}
    for s in sections:
        children.setdefault(s.parent, []).append(s.ordinal)

    def subtree(o: int) -> list[int]:
        return [o] + [d for c in children.get(o, []) for d in subtree(c)]

    for s in sections:
        members = subtree(s.ordinal)
        assert s.subtree_blocks == sum(sections[m].direct_blocks for m in members)
        assert s.subtree_tokens == sum(sections[m].direct_tokens for m in members)
        assert s.direct_tokens == sum(b.tokens for b in zh_record.blocks if b.section == s.ordinal)
    roots = [s for s in sections if s.parent == -1]
    assert sum(s.subtree_blocks for s in roots) == len(zh_record.blocks)
    assert any(s.depth == 3 for s in sections)


def test_duplicate_titles_get_unique_paths_and_parents_follow_depth() -> None:
    doc = document(
        section("Usage", 1, "Top."),
        section("Example", 2, "First example."),
        section("Example", 2, "Second example."),
        section("Usage", 1, "Again."),
        section("Deep", 3, "Skipped a level."),
    )
    record = chunk(doc)
    paths = [s.path for s in record.sections]
    assert len(set(paths)) == len(paths)
    assert paths[1] == f"Usage{PATH_SEPARATOR}Example"
    assert paths[2] == f"Usage{PATH_SEPARATOR}Example (2)"
    assert [s.parent for s in record.sections] == [-1, 0, 0, -1, 3]
    assert [s.depth for s in record.sections] == [1, 2, 2, 1, 2]  # a skipped level is closed


def test_first_sentence_skips_the_heading_and_is_capped(zh_record: DocumentRecord) -> None:
    record = chunk(
        document(
            section("Intro", 1, "This is the first sentence. This is not."),
            section("Long", 1, "word " * 100 + "end."),
        )
    )
    assert record.sections[0].first_sentence == "This is the first sentence."
    assert len(record.sections[1].first_sentence) == FIRST_SENTENCE_MAX_CHARS
    with_body = [s for s in zh_record.sections if s.first_sentence]
    assert len(with_body) > len(zh_record.sections) // 2
    # (section 0's body really opens with the book title again; the others open with text)
    assert all(s.first_sentence != s.title for s in with_body if s.ordinal > 0)


def test_document_without_text_is_refused() -> None:
    empty = ParsedDocument(
        title="x",
        lang="en",
        format="text",
        sections=(ParsedSection(title="x", depth=1, paragraphs=(Paragraph("  \n "),)),),
    )
    with pytest.raises(ChunkError) as info:
        chunk(empty)
    assert info.value.reason == "no_text"
    copy = pickle.loads(pickle.dumps(info.value))  # crosses process boundaries intact
    assert (copy.reason, copy.message) == (info.value.reason, info.value.message)
