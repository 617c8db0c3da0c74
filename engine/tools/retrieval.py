"""Hybrid block search for search_blocks: a keyword list and a vector list fused by reciprocal
rank fusion (RRF), deterministic for the same snapshot, query, vector and parameters.

Pure computation over an open snapshot, run in a worker thread: it never embeds (the caller
passes the query vector), never falls back to one list when the other is unavailable, and never
lets a score reach the model — scores and ranks go to the trace only.

Levers, each chosen for a general reason and measured on the dev gold set as a whole (see
tests/engine/tools/test_retrieval_quality.py), never tuned per question:
- the heading path is a second BM25 field: a block belongs to its section and to every
  ancestor section, so "the Threads part of the Library FAQ" reaches the blocks under it;
- English function words are dropped from the keyword query: in a mixed Chinese/English
  collection half the blocks lack them, so their IDF stays high and they reward long blocks;
- navigational blocks (tables of contents, back-of-book indexes, lists of tables, web menus,
  headings without a body) are down-weighted in both lists: they are dense with the very terms
  a question uses but never hold the answer;
- blocks with the same text (one book imported in two formats) are collapsed: a second copy
  tells the model nothing new and would take one of only top_k places;
- each list's first block keeps a place in the result: RRF rewards blocks that both lists
  rank moderately over a block one list is sure of, which loses precise keyword hits;
- a block whose document is in another language than the query (a Chinese question over an
  English manual) gets twice the vector list's weight: the keyword list can hardly reach it,
  while same-language blocks that match a few keyword bigrams would otherwise crowd it out
  (built-in multilingual model only: another provider's cross-language alignment is unknown).
  Chosen on held-apart halves of both question sets: x2 ties or wins on every half, x3 costs
  same-language questions (bench/bench_retrieval_quality.py prints the grid);
- with sentence-window vectors, a block's place in the vector list also counts how close the
  query comes to its section as a whole (the mean of the section's whole-block vectors): one
  sentence alone has lost the context its section gives it, so of two equally close sentences
  the one in the section about the question's topic ranks first. Its similarity alone still
  decides whether it clears the floor. Weights 0.075 to 0.15 tie or win on every half of both
  sets, 0.2 costs the shared set's half A (bench/bench_retrieval_quality.py prints the grid);
- a Chinese query's informative characters are keyword terms too, in blocks that already hold
  one of its words or bigrams: Chinese words for one thing share characters (关掉/关闭,
  安装/装上) where their bigrams differ, so a block that says it another way still matches
  part of the query. The gate keeps a nonsense query of common characters at no_match.
  Measured on both sets: ties every half's recall@5 or wins, MRR 0.607 -> 0.643 (shared),
  0.744 -> 0.772 (second).
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from engine.embedding.probes import carries_content
from index.bm25 import idf, top_k
from index.records import RetrievalParams
from index.sections import SectionPaths
from index.snapshot import Snapshot
from index.textnorm import fold, query_tokens, tokenize

# Bump whenever the ranking changes: recorded in every search trace.
# 2: keyword candidates need an informative query term; vector candidates under the snapshot's
# calibrated similarity floor are dropped.
# 3: the vector list counts twice for a block whose document's language is not the query's.
# 4: with sentence-window vectors, the vector list ranks by similarity plus
# SECTION_CONTEXT_WEIGHT x the similarity to the block's section.
# 5: a Chinese query's informative characters score in blocks that match one of its terms.
RETRIEVAL_VERSION = "citewise-hybrid-5"

Mode = Literal["hybrid", "keyword", "vector"]
_Ints = npt.NDArray[np.int64]
_Floats = npt.NDArray[np.float64]
_Floats32 = npt.NDArray[np.float32]

# The vector list's weight for a block of another language than the query (see above).
CROSS_LINGUAL_VECTOR_WEIGHT = 2.0
# The weight of a block's section in its vector-list score, sentence-window layouts only.
SECTION_CONTEXT_WEIGHT = 0.15
# Each list contributes its first LIST_DEPTH_PER_RESULT * top_k blocks (at least
# MIN_LIST_DEPTH) to the fusion; deeper ranks are topical neighbours, not answers.
LIST_DEPTH_PER_RESULT = 4
MIN_LIST_DEPTH = 20
# Candidates read per list before down-weighting, so demoted blocks make room for others.
POOL_PER_DEPTH = 3
VECTOR_READ_SHOWN = 10  # vector candidates the trace lists with their similarity
PATH_WEIGHT = 1.0  # the heading path counts as much as the body (a BM25F-style field sum)
NAVIGATION_WEIGHT = 0.2  # a navigational block's score is multiplied by this, not removed

# English function words: question scaffolding that carries no topic. Only dropped when the
# query keeps at least one other token.
_STOP_WORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other our ours out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
# Chinese particles, pronouns and copulas, and the bigrams of question scaffolding: a CJK token
# made only of these (or one of the bigrams) carries no topic, just as English function words.
ZH_FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊呀么是在和与及或也都就而把被让给对从向到为以于之其这那个我你他她它们有没不要会能"
)
_ZH_SCAFFOLDING = "什么 怎么 怎样 如何 为什 么样 哪些 哪个 是否 可以 应该 一个 有什 为何 请问 一下"
ZH_SCAFFOLDING = frozenset(_ZH_SCAFFOLDING.split())


class Fusion(msgspec.Struct, frozen=True, kw_only=True):
    """How the two lists are fused: each list's depth (`depth_per_result` * top_k, at least
    MIN_LIST_DEPTH) and the weight of its reciprocal ranks. The defaults are the shipped
    ranking; other values exist to measure it (bench/bench_retrieval_quality.py).

    `cross_lingual_vector_weight` multiplies the vector list's weight for a block whose
    document is in another language than the query (Chinese script against an English
    document or the reverse): there the keyword list can hardly match, so only the vectors
    speak for that block. `keep_heads` is the "each list's first block" rule.
    `section_context_weight` is how much the similarity to a block's section adds to its
    vector-list score (sentence-window layouts with whole-block vectors only)."""

    depth_per_result: int = LIST_DEPTH_PER_RESULT
    keyword_weight: float = 1.0
    vector_weight: float = 1.0
    cross_lingual_vector_weight: float = CROSS_LINGUAL_VECTOR_WEIGHT
    section_context_weight: float = SECTION_CONTEXT_WEIGHT
    keep_heads: bool = True
    # "rrf": weight / (rrf_k + rank); "scores": each list's scores scaled to [0, 1] within the
    # list (BM25 over its best, similarity above the floor over the best's), times the weight.
    method: Literal["rrf", "scores"] = "rrf"


DEFAULT_FUSION = Fusion()


class RankedBlock(msgspec.Struct, frozen=True, kw_only=True):
    """One returned block and why: its place in each list and the fused score (trace only)."""

    ordinal: int
    citation: str
    fused: float
    keyword_rank: int | None  # 1-based, after down-weighting and collapsing duplicates
    keyword_score: float | None  # BM25 body + heading path, before down-weighting
    vector_rank: int | None
    similarity: float | None  # cosine similarity of the query and block vectors
    navigational: bool
    kept_as_list_head: bool  # placed by the "each list's first block" rule
    # cosine similarity of the query and the block's section (the mean of its whole-block
    # vectors), when it counted in the vector list's order
    section_similarity: float | None = None


class SearchTrace(msgspec.Struct, frozen=True, kw_only=True):
    retrieval_version: str
    mode: Mode
    query_tokens: tuple[str, ...]  # the keyword query after dropping function words
    dropped_tokens: tuple[str, ...]
    keyword_candidates: int  # blocks holding at least one query token (body or heading path)
    vector_candidates: int  # blocks read from the vector index at or above the floor
    list_depth: int
    rrf_k: int
    min_similarity: float
    top_k: int
    ranking: tuple[RankedBlock, ...]
    # The snapshot's calibrated similarity floor (never below min_similarity): vector
    # candidates under it are no match and never reach the fusion.
    similarity_floor: float = 0.0
    vector_below_floor: int = 0  # blocks read from the vector index under the floor
    # (citation, similarity) of the best blocks read from the vector index, under the floor
    # or not, best first: how close the query came.
    vector_read: tuple[tuple[str, float], ...] = ()
    # The query's informative Chinese characters, scored only in blocks matching a query token.
    character_tokens: tuple[str, ...] = ()


class SearchOutcome(msgspec.Struct, frozen=True, kw_only=True):
    ordinals: tuple[int, ...]  # the result, best first
    trace: SearchTrace


def similarity_floor(snapshot: Snapshot, params: RetrievalParams) -> float:
    """The vector similarity a block must reach: the snapshot's calibrated floor (SPEC §4,
    from nonsense probes at build time) or, for a snapshot built before floors,
    min_similarity alone."""
    calibrated = snapshot.manifest.similarity_floor
    if calibrated is None:
        return params.min_similarity
    return max(params.min_similarity, calibrated.threshold)


def informative(token: str) -> bool:
    """Whether a query token carries information: not an English function word, not a CJK
    token of Chinese function characters alone, not a bigram of question scaffolding."""
    if token in STOP_WORDS or token in ZH_SCAFFOLDING:
        return False
    return not all(ch in ZH_FUNCTION_CHARS for ch in token)


def keyword_query(query: str) -> tuple[list[str], list[str]]:
    """(tokens to search, tokens dropped as carrying no information). A query of function
    words, scaffolding and punctuation alone searches no keyword at all: its keyword list is
    empty, so over a whole collection it can end in no_match (SPEC §4)."""
    tokens = query_tokens(query)
    kept = [t for t in tokens if informative(t)]
    return kept, [t for t in tokens if t not in kept]


_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")


def character_terms(tokens: Sequence[str]) -> list[str]:
    """The characters of the keyword query's CJK bigrams that carry information (not Chinese
    function characters) and are not query tokens already, in first-occurrence order."""
    out: list[str] = []
    for token in tokens:
        if len(token) < 2 or not _CJK_CHAR.fullmatch(token[0]):
            continue
        for ch in token:
            if ch not in ZH_FUNCTION_CHARS and ch not in out and ch not in tokens:
                out.append(ch)
    return out


# A Chinese character carries about as much as a short English word: a query is Chinese when
# its Chinese characters number at least a third of its Latin letters ("Debian 里 apt 和
# apt-get 该怎么选？" is Chinese, "What does \\include do in 中文 LaTeX?" is English).
LATIN_LETTERS_PER_CJK_CHAR = 3


def query_language(query: str) -> str:
    """ "zh" or "en" by the script most of the query is written in; "" with neither."""
    cjk = len(_CJK_CHAR.findall(query))
    latin = len(_LATIN_LETTER.findall(query))
    if cjk == 0 and latin == 0:
        return ""
    return "zh" if cjk * LATIN_LETTERS_PER_CJK_CHAR >= latin else "en"


def _aligned_across_languages(snapshot: Snapshot) -> bool:
    """Whether the snapshot's vectors are known to put a question and its answer close across
    Chinese and English: measured for the built-in multilingual model only; another provider's
    model may not be, and then its cross-language vector hits are no better than others."""
    spec = snapshot.manifest.embedding
    return spec is not None and spec.provider == "local"


def _section_context_applies(snapshot: Snapshot, fusion: Fusion) -> bool:
    """Whether the vector list weighs each block's section: only where the vectors are
    sentence windows with a whole-block vector per block to form the section from (one
    vector per block already holds the block's context)."""
    layout = snapshot.manifest.vector_layout
    return (
        fusion.section_context_weight != 0.0
        and layout is not None
        and layout.granularity == "sentence"
        and layout.with_block
    )


def search(
    snapshot: Snapshot,
    query: str,
    query_vector: npt.NDArray[np.floating] | None,
    docs: Sequence[int] | None,
    params: RetrievalParams,
    mode: Mode = "hybrid",
    fusion: Fusion = DEFAULT_FUSION,
) -> SearchOutcome:
    """The best `params.top_k` blocks for `query` within `docs` (None = all), best first.

    `query_vector` is the query embedded with the snapshot's own embedding model; it is
    required unless mode is "keyword" ("keyword" and "vector" exist to measure each list).
    """
    if mode != "keyword" and query_vector is None:
        raise ValueError("a query vector is required for hybrid and vector search")
    aux = _aux(snapshot)
    depth = max(MIN_LIST_DEPTH, fusion.depth_per_result * params.top_k)
    pool = POOL_PER_DEPTH * depth
    tokens, dropped = keyword_query(query)
    characters = character_terms(tokens)
    floor = similarity_floor(snapshot, params)
    found: list[tuple[int, float]] = []
    read: tuple[tuple[str, float], ...] = ()

    keyword: list[tuple[int, float]] = []
    n_keyword = 0
    if mode != "vector":
        ordinals, scores = aux.keyword_scores(snapshot, tokens, characters, docs, params)
        n_keyword = len(ordinals)
        keyword = top_k(ordinals, scores, pool)
    vector: list[tuple[int, float]] = []
    if mode != "keyword":
        assert query_vector is not None
        found = snapshot.vector_search(query_vector, pool, docs)
        # A query of punctuation and symbols alone means nothing, however close its vector
        # comes to punctuation-heavy blocks (measured: "??? !!! ..." reached 0.45 on the
        # shared corpus, above its floor).
        vector = [(o, s) for o, s in found if s >= floor] if carries_content(query) else []
        read = tuple((snapshot.block(o).citation, s) for o, s in found[:VECTOR_READ_SHOWN])
    # The vector list's order: similarity, plus the block's section's when that counts.
    section: dict[int, float] = {}
    vector_order = vector
    if vector and _section_context_applies(snapshot, fusion):
        assert query_vector is not None
        ordinals_in = np.asarray([o for o, _ in vector], dtype=np.int64)
        closeness = aux.section_similarity(snapshot, ordinals_in, query_vector)
        section = {o: float(c) for o, c in zip(ordinals_in.tolist(), closeness, strict=True)}
        weight = fusion.section_context_weight
        vector_order = [(o, s + weight * section[o]) for o, s in vector]

    keyword_scored = aux.head_scored(snapshot, keyword, depth)
    vector_scored = aux.head_scored(snapshot, vector_order, depth)
    keyword_list = [o for o, _ in keyword_scored]
    vector_list = [o for o, _ in vector_scored]
    scaled = (
        _scaled(keyword_scored, 0.0),
        _scaled(vector_scored, floor),
    )
    # Copies of one text (a book imported in two formats) are one candidate: their ranks in
    # the two lists add up, and the copy first in document order stands for them.
    fused: dict[bytes, float] = {}
    representative: dict[bytes, int] = {}
    language = query_language(query)
    crossed = (
        mode == "hybrid"  # each list alone keeps its own order
        and fusion.cross_lingual_vector_weight != 1.0
        and language != ""
        and _aligned_across_languages(snapshot)
    )
    weighted = (
        (keyword_list, scaled[0], fusion.keyword_weight, False),
        (vector_list, scaled[1], fusion.vector_weight, crossed),
    )
    for ranked, list_scores, weight, by_language in weighted:
        for rank, ordinal in enumerate(ranked, start=1):
            key = aux.text_key(snapshot, ordinal)
            w = weight
            if by_language and aux.language(snapshot, ordinal) not in ("", language):
                w *= fusion.cross_lingual_vector_weight
            part = (
                list_scores[rank - 1] if fusion.method == "scores" else 1.0 / (params.rrf_k + rank)
            )
            fused[key] = fused.get(key, 0.0) + w * part
            representative[key] = min(ordinal, representative.get(key, ordinal))
    order = sorted(fused, key=lambda key: (-fused[key], representative[key]))
    chosen = order[: params.top_k]
    kept_as_head: set[bytes] = set()
    heads = [aux.text_key(snapshot, ranked[0]) for ranked in (keyword_list, vector_list) if ranked]
    if not fusion.keep_heads:
        heads = []
    for head in heads:
        if head in chosen or not chosen:
            continue
        for i in range(len(chosen) - 1, -1, -1):
            if chosen[i] not in heads:
                chosen[i] = head
                kept_as_head.add(head)
                break
    chosen.sort(key=lambda key: (-fused[key], representative[key]))
    result = [representative[key] for key in chosen]

    keyword_rank = {aux.text_key(snapshot, o): r for r, o in enumerate(keyword_list, start=1)}
    vector_rank = {aux.text_key(snapshot, o): r for r, o in enumerate(vector_list, start=1)}
    keyword_score = {aux.text_key(snapshot, o): s for o, s in keyword}
    similarity = {aux.text_key(snapshot, o): s for o, s in vector}
    ranking = tuple(
        RankedBlock(
            ordinal=representative[key],
            citation=snapshot.block(representative[key]).citation,
            fused=fused[key],
            keyword_rank=keyword_rank.get(key),
            keyword_score=keyword_score.get(key),
            vector_rank=vector_rank.get(key),
            similarity=similarity.get(key),
            navigational=aux.navigational(snapshot, representative[key]),
            kept_as_list_head=key in kept_as_head,
            section_similarity=section.get(representative[key]),
        )
        for key in chosen
    )
    trace = SearchTrace(
        retrieval_version=RETRIEVAL_VERSION,
        mode=mode,
        query_tokens=tuple(tokens),
        dropped_tokens=tuple(dropped),
        keyword_candidates=n_keyword,
        vector_candidates=len(vector),
        list_depth=depth,
        rrf_k=params.rrf_k,
        min_similarity=params.min_similarity,
        top_k=params.top_k,
        ranking=ranking,
        similarity_floor=floor,
        vector_below_floor=len(found) - len(vector),
        vector_read=read,
        character_tokens=tuple(characters),
    )
    return SearchOutcome(ordinals=tuple(result), trace=trace)


def _scaled(scored: list[tuple[int, float]], floor: float) -> list[float]:
    """A list's scores mapped onto [0, 1]: `floor` to 0 and the list's best to 1."""
    if not scored:
        return []
    span = scored[0][1] - floor
    if span <= 0.0:
        return [1.0 for _ in scored]
    return [max(0.0, (s - floor) / span) for _, s in scored]


# -- navigational blocks ---------------------------------------------------------------------

_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)\b", re.IGNORECASE)  # "Intro . . . 12"
_PAGE_REF = re.compile(r"[,，]\s*\d{1,4}(?:\s*[–-]\s*\d{1,4})?(?=[\s,，]|$)")  # "\\index, 81, 82"
# "2.5.1. Title": a multi-level number, which numbered steps ("1. Run …") do not have.
_OUTLINE_ENTRY = re.compile(r"^[A-Z]?\d+\.\d+(?:\.\d+)*\.?\s+\S")
_SENTENCE_END = re.compile(r"[.!?。！？:：;；]$")
_MENU_ITEM = re.compile(r"^[^|+].{0,40}\s[|»›]$")  # "next |", "Python »" (not table rows)
_SECTION_NUMBER = re.compile(r"^(?:第\s*\S{1,4}\s*章|附录\s*[A-Z]?\.?|[A-Z]?\d+(?:\.\d+)*\.?)\s*")
_WORD_CHAR = re.compile(r"\w")


def heading_key(line: str) -> str:
    """A heading or contents line without its number, folded, whitespace collapsed."""
    return _SECTION_NUMBER.sub("", " ".join(fold(line).split()))


def is_navigational(text: str, section_title: str, headings: frozenset[str]) -> bool:
    """Whether a block only points elsewhere: a table of contents or index (page references
    or outline numbers on most lines), a list of the document's own headings, a web menu, or
    a heading with (almost) no body. `headings` are the document's `heading_key`s.

    Measured on the shared corpus: 267 of 3,091 blocks, every one a contents page, index, list
    of tables, menu or bare heading; numbered steps and ASCII tables are not caught.
    """
    body = text[len(section_title) :] if text.startswith(section_title) else text
    if len(_WORD_CHAR.findall(body)) < 8:
        return True
    references = len(_LEADER.findall(text)) + len(_PAGE_REF.findall(text))
    if references >= 3 and references * 40 >= len(text):  # a reference every 40 characters
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) >= 3:
        if sum(1 for line in lines if heading_key(line) in headings) >= 0.6 * len(lines):
            return True
        if sum(1 for line in lines if _MENU_ITEM.search(line)) >= 0.3 * len(lines):
            return True
    if len(lines) >= 4:
        entries = sum(
            1 for line in lines if _OUTLINE_ENTRY.match(line) and not _SENTENCE_END.search(line)
        )
        if entries >= 0.7 * len(lines):
            return True
    return False


# -- per-snapshot data -------------------------------------------------------------------------


class _Aux:
    """What search derives from a snapshot once: the heading-path field index, and per-block
    facts computed on first use (navigational or not). Safe for concurrent searches: lazily
    filled entries are idempotent."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.n_blocks = snapshot.n_blocks
        self._navigational = np.zeros(self.n_blocks, dtype=np.int8)  # 0 unknown, 1 no, 2 yes
        self._headings: dict[int, frozenset[str]] = {}
        self._keys: dict[int, bytes] = {}
        # Unit mean of each section's whole-block vectors, by global section index, on first
        # use; and the blocks of each section (ordinals grouped by section), built once.
        self._section_vectors: dict[int, _Floats32] = {}
        self._by_section: tuple[_Ints, _Ints] | None = None
        # The heading-path field as the build wrote it; snapshots from before it was written
        # (or read with another tokenizer) compute it here, the same way.
        built = snapshot.section_paths()
        if built is not None:
            self.postings: SectionPaths | dict[str, tuple[_Ints, _Floats]] = built
            self.block_section = built.block_section
            self.section_lengths = built.section_lengths
        else:
            self._compute_section_paths(snapshot)
        average = float(self.section_lengths.mean()) if len(self.section_lengths) else 0.0
        self.average_length = average or 1.0

    def _compute_section_paths(self, snapshot: Snapshot) -> None:
        postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        first_section: list[int] = []  # global index of each document's first section
        for info in snapshot.documents:
            first_section.append(len(lengths))
            for section in info.sections:
                tokens = Counter(tokenize(section.path))
                for token, tf in tokens.items():
                    postings.setdefault(token, []).append((len(lengths), tf))
                lengths.append(sum(tokens.values()))
        # The global section index of every block, from the block store itself.
        offsets = np.zeros(self.n_blocks, dtype=np.int64)
        for info, first in zip(snapshot.documents, first_section, strict=True):
            offsets[info.block_range] = first
        self.block_section = snapshot.block_sections() + offsets
        self.section_lengths = np.asarray(lengths, dtype=np.float64)
        self.postings = {
            token: (
                np.asarray([i for i, _ in entries], dtype=np.int64),
                np.asarray([tf for _, tf in entries], dtype=np.float64),
            )
            for token, entries in postings.items()
        }

    def keyword_scores(
        self,
        snapshot: Snapshot,
        tokens: Sequence[str],
        characters: Sequence[str],
        docs: Sequence[int] | None,
        params: RetrievalParams,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """(ascending ordinals, BM25 of the body + PATH_WEIGHT * BM25 of the heading path) of
        every block in scope holding a query token in either field; a block that does also
        scores the body BM25 of `characters` (single CJK characters, see `character_terms`)."""
        if not tokens or self.n_blocks == 0:
            return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.float64)
        k1, b = params.bm25_k1, params.bm25_b
        n_sections = len(self.section_lengths)
        section_scores = np.zeros(n_sections, dtype=np.float64)
        for token in tokens:
            entry = self.postings.get(token)
            if entry is None:
                continue
            sections, tf = entry
            norm = k1 * (1.0 - b + b * self.section_lengths[sections] / self.average_length)
            section_scores[sections] += idf(len(sections), n_sections) * tf / (tf + norm)
        dense = PATH_WEIGHT * section_scores[self.block_section]
        body_ordinals, body_scores = snapshot.bm25_scores(tokens, docs)
        dense[body_ordinals] += body_scores
        if characters:
            char_ordinals, char_scores = snapshot.bm25_scores(characters, docs)
            matched = dense[char_ordinals] > 0.0
            dense[char_ordinals[matched]] += char_scores[matched]
        if docs is not None:
            in_scope = np.zeros(self.n_blocks, dtype=np.bool_)
            for doc in docs:
                in_scope[snapshot.documents[doc].block_range] = True
            dense[~in_scope] = 0.0
        ordinals = np.flatnonzero(dense > 0.0).astype(np.uint32)
        return ordinals, dense[ordinals]

    def section_similarity(
        self, snapshot: Snapshot, ordinals: _Ints, query: npt.NDArray[np.floating]
    ) -> _Floats32:
        """The cosine similarity of `query` and the section of each block in `ordinals`: the
        unit mean of the first stored vector (the whole block) of the section's blocks."""
        q = np.asarray(query, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        sections = self.block_section[ordinals]
        missing = sorted({int(s) for s in sections} - self._section_vectors.keys())
        if missing:
            if self._by_section is None:
                order = np.argsort(self.block_section, kind="stable")
                self._by_section = (order, self.block_section[order])
            order, sorted_sections = self._by_section
            for s in missing:
                lo, hi = np.searchsorted(sorted_sections, [s, s + 1])
                mean = snapshot.lead_vectors(order[lo:hi]).mean(axis=0)
                self._section_vectors[s] = mean / (float(np.linalg.norm(mean)) or 1.0)
        matrix = np.stack([self._section_vectors[int(s)] for s in sections])
        return matrix @ q

    def head_scored(
        self, snapshot: Snapshot, scored: list[tuple[int, float]], depth: int
    ) -> list[tuple[int, float]]:
        """The first `depth` distinct blocks of a list after down-weighting navigational ones,
        with their scores after down-weighting."""
        weighted = [
            (o, s * NAVIGATION_WEIGHT if self.navigational(snapshot, o) else s) for o, s in scored
        ]
        weighted.sort(key=lambda entry: (-entry[1], entry[0]))
        seen: set[bytes] = set()
        out: list[tuple[int, float]] = []
        for ordinal, score in weighted:
            key = self.text_key(snapshot, ordinal)
            if key not in seen:
                seen.add(key)
                out.append((ordinal, score))
                if len(out) == depth:
                    break
        return out

    def head(self, snapshot: Snapshot, scored: list[tuple[int, float]], depth: int) -> list[int]:
        """The first `depth` distinct blocks of a list after down-weighting navigational ones."""
        return [o for o, _ in self.head_scored(snapshot, scored, depth)]

    def distinct(self, snapshot: Snapshot, ordinals: list[int]) -> list[int]:
        """`ordinals` without blocks whose text repeats an earlier one's."""
        seen: set[bytes] = set()
        out: list[int] = []
        for ordinal in ordinals:
            key = self.text_key(snapshot, ordinal)
            if key not in seen:
                seen.add(key)
                out.append(ordinal)
        return out

    def text_key(self, snapshot: Snapshot, ordinal: int) -> bytes:
        """Identity of a block's text up to case, Unicode form and whitespace."""
        key = self._keys.get(ordinal)
        if key is None:
            folded = "".join(fold(snapshot.block(ordinal).text).split())
            key = hashlib.blake2b(folded.encode("utf-8"), digest_size=16).digest()
            self._keys[ordinal] = key
        return key

    def language(self, snapshot: Snapshot, ordinal: int) -> str:
        """The language of the block's document ("en", "zh", or "" when unknown)."""
        return snapshot.documents[snapshot.block(ordinal).doc].lang

    def navigational(self, snapshot: Snapshot, ordinal: int) -> bool:
        known = int(self._navigational[ordinal])
        if known:
            return known == 2
        block = snapshot.block(ordinal)
        headings = self._headings.get(block.doc)
        info = snapshot.documents[block.doc]
        if headings is None:
            headings = frozenset(heading_key(s.title) for s in info.sections) - {""}
            self._headings[block.doc] = headings
        answer = is_navigational(block.text, info.sections[block.section].title, headings)
        self._navigational[ordinal] = 2 if answer else 1
        return answer


_lock = threading.Lock()
_cache: weakref.WeakKeyDictionary[Snapshot, _Aux] = weakref.WeakKeyDictionary()
# A request opens (pins) its snapshot afresh, so what search derived from a snapshot is also
# kept by the snapshot's content hash, its exact identity: the next request's first search
# finds the heading sets, navigational flags and text keys its predecessors computed. _Aux
# holds copies, never views of a snapshot's maps, so it outlives the Snapshot it came from.
_BY_CONTENT_MAX = 4
_by_content: OrderedDict[str, _Aux] = OrderedDict()


def _aux(snapshot: Snapshot) -> _Aux:
    with _lock:
        aux = _cache.get(snapshot)
        if aux is not None:
            return aux
        identity = snapshot.manifest.content_hash
        aux = _by_content.get(identity) if identity else None
        if aux is None or aux.n_blocks != snapshot.n_blocks:
            aux = _Aux(snapshot)
        if identity:
            _by_content[identity] = aux
            _by_content.move_to_end(identity)
            while len(_by_content) > _BY_CONTENT_MAX:
                _by_content.popitem(last=False)
        _cache[snapshot] = aux
        return aux
