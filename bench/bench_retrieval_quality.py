"""Retrieval quality on real questions, measured on held-apart halves (issue 21): recall@5,
recall@10 and MRR by kind for the keyword list alone, the vector list alone and hybrid search,
on the shared gold set and the second set (tests/fixtures/gold/second.jsonl); keyword-side
variants (jieba word segmentation added to CJK bigrams, Snowball English stems added to words,
camelCase parts, query bigrams kept only inside jieba words), each on and off; a grid of fusion
settings chosen on one half and reported on the other; the weight of a block's section in the
vector list (sentence windows), chosen the same way; and Rocchio feedback on the query vector.

Halves split questions by the parity of the number their id ends with (odd = A, even = B).
A setting is chosen on one half of both sets pooled (recall@5, then MRR, then the shipped
default) and reported on the other half of each set, both ways round. The snapshot is only read:
keyword variants are BM25 indexes built beside it in a temporary directory from its own blocks.

    .venv/bin/python -m bench.bench_retrieval_quality --home DATA_DIR [--json OUT.json]

DATA_DIR holds the shared corpus imported (`CITEWISE_HOME=DATA_DIR citewise import
../shared/corpus/docs`); `citewise bench retrieval_quality` imports it into a temporary one.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import numpy.typing as npt

from bench.runner import CORPUS, REPO, Report
from engine.embedding import LocalEmbedding
from engine.evaluation.gold import GoldItem, load_gold, normalize
from engine.tools import retrieval
from engine.tools.retrieval import DEFAULT_FUSION, Fusion, Mode, SearchOutcome, search
from index import bm25
from index.bm25 import Bm25Index, write_bm25
from index.records import RetrievalParams
from index.snapshot import Snapshot
from index.textnorm import fold, folded_tokens, query_tokens

SETS = {"shared": CORPUS / "gold.jsonl", "second": REPO / "tests/fixtures/gold/second.jsonl"}
MODES: tuple[Mode, ...] = ("keyword", "vector", "hybrid")
KEYWORD_MODES: tuple[Mode, ...] = ("keyword", "hybrid")  # the modes a keyword variant changes
KINDS = ("paraphrase", "cross_lingual", "compare", "fact", "coverage")
NONSENSE = (
    "xqzv blorft wumpus glarbage",
    "？？？！！！。。。",
    "的了吗呢吧",
    "the of and to is",
    "zzzzqqqq 鑫鑫鑫鑫",
)
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]{2,}")
_LATIN_WORD = re.compile(r"[a-z]{3,}")


# -- keyword-side variants ------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    segment: bool  # jieba words (2+ characters) of each CJK run, besides its bigrams
    stem: bool  # the Snowball English stem of each Latin word, when it differs from the word
    # The keyword query before the informative-term filter: only English function words
    # dropped, and every token kept when nothing else is left.
    old_terms: bool = False
    # The parts of each camelCase word (read before folding), besides the whole word: the
    # shipped tokenizer already splits snake_case and dotted names at "_" and ".".
    identifiers: bool = False
    # Query side only, the index unchanged: the CJK bigrams of the query that lie inside no
    # jieba word ("行里", "里正" of "命令行里正常") are dropped from the keyword query, unless
    # nothing would be left.
    query_words: bool = False
    # Query side only: without the query's single Chinese characters (retrieval
    # character_terms), as before citewise-hybrid-5.
    no_characters: bool = False


VARIANTS = (
    Variant("bigrams", False, False),
    Variant("bigrams+jieba", True, False),
    Variant("bigrams+stem", False, True),
    Variant("bigrams+jieba+stem", True, True),
    Variant("bigrams, old term filter", False, False, old_terms=True),
    Variant("bigrams+identifiers", False, False, identifiers=True),
    Variant("bigrams, query bigrams within jieba words", False, False, query_words=True),
    Variant("bigrams, no query characters", False, False, no_characters=True),
)
# A word with a case change inside it ("readFileSync", "HTTPServer"), and its parts.
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|\b[A-Z]{2,}[a-z][A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_parts(text: str) -> list[str]:
    """The folded parts of every camelCase word of unfolded `text` (the whole word is a token
    already)."""
    out: list[str] = []
    for word in _CAMEL.findall(text):
        parts = _CAMEL_PART.findall(word)
        if len(parts) > 1:
            out.extend(fold(part) for part in parts)
    return out


def _old_keyword_query(query: str) -> tuple[list[str], list[str]]:
    tokens = query_tokens(query)
    kept = [t for t in tokens if t not in retrieval.STOP_WORDS]
    if not kept:
        return tokens, []
    return kept, [t for t in tokens if t in retrieval.STOP_WORDS]


def crossing_bigrams(query: str) -> set[str]:
    """The CJK bigrams of `query` that lie inside no jieba word of its CJK runs."""
    import jieba

    jieba.setLogLevel(60)
    inside: set[str] = set()
    every: set[str] = set()
    for run in _CJK_RUN.findall(fold(query)):
        every.update(run[i : i + 2] for i in range(len(run) - 1))
        for word in jieba.lcut(run, HMM=False):
            inside.update(word[i : i + 2] for i in range(len(word) - 1))
    return every - inside


KeywordQuery = Callable[[str], tuple[list[str], list[str]]]


def _within_words(shipped: KeywordQuery) -> KeywordQuery:
    """`shipped` without the query's CJK bigrams that cross a jieba word boundary, unless
    nothing else is left."""

    def keyword_query(query: str) -> tuple[list[str], list[str]]:
        tokens, dropped = shipped(query)
        crossing = crossing_bigrams(query)
        kept = [t for t in tokens if t not in crossing]
        if not kept:
            return tokens, dropped
        return kept, dropped + [t for t in tokens if t in crossing]

    return keyword_query


def _extras(variant: Variant) -> Callable[[str], list[str]]:
    """The tokens a variant adds to those of folded text."""
    if not (variant.segment or variant.stem):
        return lambda folded: []
    import jieba
    import snowballstemmer

    jieba.setLogLevel(60)
    stemmer = snowballstemmer.stemmer("english")

    def extras(folded: str) -> list[str]:
        out: list[str] = []
        if variant.segment:
            for run in _CJK_RUN.findall(folded):
                out.extend(w for w in jieba.lcut(run, HMM=False) if len(w) >= 2)
        if variant.stem:
            for word in _LATIN_WORD.findall(folded):
                stem = stemmer.stemWord(word)
                if stem != word:
                    out.append(stem)
        return out

    return extras


@contextlib.contextmanager
def keyword_variant(snapshot: Snapshot, variant: Variant, tmp: Path) -> Iterator[None]:
    """Search `snapshot` with the body BM25 index and query tokens of `variant`."""
    if variant.no_characters:
        shipped_characters = retrieval.character_terms
        retrieval.character_terms = lambda tokens: []
        try:
            yield
        finally:
            retrieval.character_terms = shipped_characters
        return
    if variant.old_terms or variant.query_words:
        shipped = retrieval.keyword_query
        patched = _old_keyword_query if variant.old_terms else _within_words(shipped)
        retrieval.keyword_query = patched  # type: ignore[assignment]
        try:
            yield
        finally:
            retrieval.keyword_query = shipped
        return
    if not (variant.segment or variant.stem or variant.identifiers):
        yield
        return
    folded_extras = _extras(variant)

    def extras(text: str) -> list[str]:
        return folded_extras(fold(text)) + (identifier_parts(text) if variant.identifiers else [])

    token_lists = []
    for ordinal in range(snapshot.n_blocks):
        block = snapshot.block(ordinal)
        title = snapshot.documents[block.doc].sections[block.section].title
        folded_title, folded_text = fold(title), fold(block.text)
        token_lists.append(
            folded_tokens(folded_title)
            + folded_tokens(folded_text)
            + extras(title)
            + extras(block.text)
        )
    params = snapshot.manifest.retrieval
    assert params is not None
    directory = tmp / variant.name
    directory.mkdir()
    _, stats = write_bm25(directory, token_lists, k1=params.bm25_k1, b=params.bm25_b)
    files = [(directory / name).read_bytes() for name in bm25.FILES]
    index = Bm25Index(stats, *files)
    original_index, original_query = snapshot._bm25, retrieval.keyword_query

    def keyword_query(query: str) -> tuple[list[str], list[str]]:
        tokens, dropped = original_query(query)
        added = list(dict.fromkeys(t for t in extras(query) if t not in tokens))
        return tokens + added, dropped

    snapshot._bm25 = index
    retrieval.keyword_query = keyword_query
    try:
        yield
    finally:
        snapshot._bm25 = original_index
        retrieval.keyword_query = original_query


# -- scoring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    set: str
    item: GoldItem
    vector: npt.NDArray[np.float32]
    quotes: tuple[str, ...]

    @property
    def half(self) -> str:
        digits = re.search(r"(\d+)$", self.item.id)
        return "A" if digits and int(digits.group(1)) % 2 else "B"


def questions(snapshot: Snapshot) -> list[Question]:
    embedder = LocalEmbedding()
    if embedder.spec != snapshot.manifest.embedding:
        raise SystemExit("the snapshot was not built with the built-in embedding model")
    out: list[Question] = []
    for name, path in SETS.items():
        items = [i for i in load_gold(path).items if i.is_retrieval]
        vectors = anyio.run(embedder.embed, [i.question for i in items]).vectors
        for item, vector in zip(items, vectors, strict=True):
            quotes = tuple(normalize(e.quote) for e in item.evidence)
            out.append(Question(name, item, np.asarray(vector, dtype=np.float32), quotes))
    return out


COLUMNS = ("n", "recall@5", "recall@10", "mrr")


def _key(q: Question) -> str:
    return f"{q.set}/{q.item.id}"


Ranks = dict[str, tuple[int | None, int | None]]  # question id -> (rank in top 5, in top 10)


Searcher = Callable[
    [Snapshot, str, npt.NDArray[np.float32], None, RetrievalParams, Mode, Fusion], SearchOutcome
]


def ranks(
    snapshot: Snapshot,
    qs: Sequence[Question],
    mode: Mode,
    params: RetrievalParams,
    fusion: Fusion,
    searcher: Searcher = search,
) -> Ranks:
    out: Ranks = {}
    folded: dict[int, str] = {}
    for q in qs:
        found: list[int | None] = []
        for k in (5, 10):
            at_k = msgspec.structs.replace(params, top_k=k)
            ordinals = searcher(snapshot, q.item.question, q.vector, None, at_k, mode, fusion)
            rank = None
            for r, ordinal in enumerate(ordinals.ordinals, start=1):
                text = folded.get(ordinal)
                if text is None:
                    text = folded[ordinal] = normalize(snapshot.block(ordinal).text)
                if any(quote in text for quote in q.quotes):
                    rank = r
                    break
            found.append(rank)
        out[f"{q.set}/{q.item.id}"] = (found[0], found[1])
    return out


def rates(qs: Sequence[Question], found: Ranks) -> dict[str, float]:
    if not qs:
        return {"n": 0, "recall@5": 0.0, "recall@10": 0.0, "mrr": 0.0}
    rows = [found[f"{q.set}/{q.item.id}"] for q in qs]
    n = len(rows)
    return {
        "n": n,
        "recall@5": round(sum(1 for r5, _ in rows if r5 is not None) / n, 3),
        "recall@10": round(sum(1 for _, r10 in rows if r10 is not None) / n, 3),
        "mrr": round(sum(1.0 / r5 for r5, _ in rows if r5 is not None) / n, 3),
    }


def by_kind(qs: Sequence[Question], found: Ranks) -> dict[str, dict[str, float]]:
    table = {"all": rates(qs, found)}
    for kind in KINDS:
        mine = [q for q in qs if q.item.kind == kind]
        if mine:
            table[kind] = rates(mine, found)
    same = [q for q in qs if q.item.kind != "cross_lingual"]
    table["same_language"] = rates(same, found)
    return table


def _choose(
    qs: Sequence[Question], results: dict[Any, Ranks], default: Any
) -> tuple[Any, dict[str, float]]:
    """The setting with the best recall@5, then MRR, on `qs`; the default wins ties."""

    def key(setting: Any) -> tuple[float, float, bool]:
        r = rates(qs, results[setting])
        return (r["recall@5"], r["mrr"], setting == default)

    best = max(results, key=key)
    return best, rates(qs, results[best])


# -- vector-side pseudo-relevance feedback ---------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """Rocchio feedback on the query vector: search once, then again with
    normalize(q + weight * mean of the first `blocks` results' best-matching part vectors)."""

    blocks: int
    weight: float


FEEDBACK = tuple(Feedback(m, w) for m in (2, 3) for w in (0.3, 0.5))


def with_feedback(feedback: Feedback) -> Searcher:
    """A searcher that applies `feedback` (a query with no vector candidate gets none: its
    no_match stays)."""
    parts: dict[int, tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]] = {}

    def best_part(snapshot: Snapshot, ordinal: int, query: npt.NDArray[np.float32]) -> Any:
        doc = snapshot.block(ordinal).doc
        info = snapshot.documents[doc]
        if doc not in parts:
            counts = snapshot.doc_part_counts(doc)
            if counts is None:
                counts = np.ones(info.block_count, dtype=np.int64)
            parts[doc] = (snapshot.doc_vectors(doc), np.concatenate([[0], np.cumsum(counts)]))
        vectors, starts = parts[doc]
        i = ordinal - info.block_start
        mine = vectors[starts[i] : starts[i + 1]]
        return mine[int(np.argmax(mine @ query))]

    def searcher(
        snapshot: Snapshot,
        query: str,
        vector: npt.NDArray[np.float32],
        docs: None,
        params: RetrievalParams,
        mode: Mode,
        fusion: Fusion,
    ) -> SearchOutcome:
        first = search(snapshot, query, vector, docs, params, mode, fusion)
        top = first.ordinals[: feedback.blocks]
        if mode == "keyword" or not top or first.trace.vector_candidates == 0:
            return first
        centroid = np.mean([best_part(snapshot, o, vector) for o in top], axis=0)
        moved = vector + feedback.weight * centroid
        moved = (moved / np.linalg.norm(moved)).astype(np.float32)
        return search(snapshot, query, moved, docs, params, mode, fusion)

    return searcher


# -- the run ----------------------------------------------------------------------------------

DEPTHS = (4, 8)  # Fusion.depth_per_result (2 and 4 both reach MIN_LIST_DEPTH at top_k 5)
RRF_KS = (10, 30, 60)
KEYWORD_WEIGHTS = (0.5, 1.0, 1.5)  # the vector list's weight stays 1
CROSS_LINGUAL_WEIGHTS = (1.0, 2.0, 3.0)  # Fusion.cross_lingual_vector_weight
GRID_NAMES = ("depth_per_result", "rrf_k", "keyword_weight", "cross_lingual_vector_weight")
SECTION_WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)  # Fusion.section_context_weight


def measure(snapshot: Snapshot, report: Report) -> dict[str, Any]:
    params = snapshot.manifest.retrieval
    assert params is not None
    qs = questions(snapshot)
    halves = {h: [q for q in qs if q.half == h] for h in ("A", "B")}
    out: dict[str, Any] = {"questions": {s: sum(1 for q in qs if q.set == s) for s in SETS}}

    # 1. Keyword variants, each list and hybrid, shipped fusion.
    variant_ranks: dict[tuple[str, Mode], Ranks] = {}
    with tempfile.TemporaryDirectory(prefix="citewise-quality-") as tmp:
        for variant in VARIANTS:
            with keyword_variant(snapshot, variant, Path(tmp)):
                for mode in KEYWORD_MODES:
                    variant_ranks[variant.name, mode] = ranks(
                        snapshot, qs, mode, params, DEFAULT_FUSION
                    )
                nonsense = {
                    text: retrieval.search(snapshot, text, None, None, params, "keyword")
                    for text in NONSENSE
                }
                out.setdefault("nonsense_keyword_candidates", {})[variant.name] = {
                    text: o.trace.keyword_candidates for text, o in nonsense.items()
                }
    vector_ranks = ranks(snapshot, qs, "vector", params, DEFAULT_FUSION)
    for variant in VARIANTS:
        variant_ranks[variant.name, "vector"] = vector_ranks

    variants: dict[str, Any] = {}
    for mode in KEYWORD_MODES:
        results = {v.name: variant_ranks[v.name, mode] for v in VARIANTS}
        for chosen_on, reported_on in (("A", "B"), ("B", "A")):
            best, _ = _choose(halves[chosen_on], results, VARIANTS[0].name)
            variants[f"{mode}: chosen on {chosen_on}"] = {
                "chosen": best,
                "held-out": {
                    s: rates([q for q in halves[reported_on] if q.set == s], results[best])
                    for s in SETS
                },
                "held-out, shipped": {
                    s: rates(
                        [q for q in halves[reported_on] if q.set == s], results[VARIANTS[0].name]
                    )
                    for s in SETS
                },
            }
        for v in VARIANTS:
            variants[f"{mode}: {v.name}, all questions"] = {
                s: rates([q for q in qs if q.set == s], variant_ranks[v.name, mode]) for s in SETS
            }
    out["keyword_variants"] = variants

    # 2. Fusion grid on the shipped tokenizer.
    grid: dict[tuple[int, int, float, float], Ranks] = {}
    settings = itertools.product(DEPTHS, RRF_KS, KEYWORD_WEIGHTS, CROSS_LINGUAL_WEIGHTS)
    for depth, rrf_k, weight, crossed in settings:
        fusion = Fusion(
            depth_per_result=depth, keyword_weight=weight, cross_lingual_vector_weight=crossed
        )
        p = msgspec.structs.replace(params, rrf_k=rrf_k)
        grid[depth, rrf_k, weight, crossed] = ranks(snapshot, qs, "hybrid", p, fusion)
    default = (
        DEFAULT_FUSION.depth_per_result,
        params.rrf_k,
        DEFAULT_FUSION.keyword_weight,
        DEFAULT_FUSION.cross_lingual_vector_weight,
    )
    fusion_out: dict[str, Any] = {"default": list(default)}
    for chosen_on, reported_on in (("A", "B"), ("B", "A")):
        best, on_chosen = _choose(halves[chosen_on], grid, default)
        fusion_out[f"chosen on {chosen_on}"] = {
            "setting": dict(zip(GRID_NAMES, best, strict=True)),
            "on its own half": on_chosen,
            "held-out": {
                s: rates([q for q in halves[reported_on] if q.set == s], grid[best]) for s in SETS
            },
            "held-out, default": {
                s: rates([q for q in halves[reported_on] if q.set == s], grid[default])
                for s in SETS
            },
        }
    # The cross-lingual weight alone (the rest shipped), per half, set and kind: it must not
    # cost same-language questions what it gains cross-language.
    crossed_out: dict[str, Any] = {}
    for crossed in CROSS_LINGUAL_WEIGHTS:
        found = grid[default[0], default[1], default[2], crossed]
        crossed_out[str(crossed)] = {
            f"{s} {h}": {
                "cross_lingual": rates(
                    [q for q in halves[h] if q.set == s and q.item.kind == "cross_lingual"], found
                ),
                "same_language": rates(
                    [q for q in halves[h] if q.set == s and q.item.kind != "cross_lingual"], found
                ),
            }
            for s in SETS
            for h in halves
        }
    fusion_out["cross_lingual_weight"] = crossed_out
    # Score-aware fusion (each list's scores scaled to [0, 1]) beside RRF, shipped weights.
    scored = ranks(
        snapshot, qs, "hybrid", params, msgspec.structs.replace(DEFAULT_FUSION, method="scores")
    )
    fusion_out["scores_vs_rrf"] = {
        s: {
            "scores": rates([q for q in qs if q.set == s], scored),
            "rrf": rates([q for q in qs if q.set == s], grid[default]),
        }
        for s in SETS
    }
    out["fusion"] = fusion_out

    # 2b. The weight of a block's section in the vector list, the rest shipped: the vector list
    # alone and hybrid, chosen on one half and reported on the other, and every weight by half.
    section_out: dict[str, Any] = {"default": DEFAULT_FUSION.section_context_weight}
    for mode in ("vector", "hybrid"):
        by_weight = {
            w: ranks(
                snapshot,
                qs,
                mode,
                params,
                msgspec.structs.replace(DEFAULT_FUSION, section_context_weight=w),
            )
            for w in SECTION_WEIGHTS
        }
        for chosen_on, reported_on in (("A", "B"), ("B", "A")):
            best, _ = _choose(halves[chosen_on], by_weight, DEFAULT_FUSION.section_context_weight)
            section_out[f"{mode}: chosen on {chosen_on}"] = {
                "chosen": best,
                "held-out": {
                    s: rates([q for q in halves[reported_on] if q.set == s], by_weight[best])
                    for s in SETS
                },
            }
        rows = []
        for w, found in by_weight.items():
            by_half = {
                f"{s} {h}": rates([q for q in halves[h] if q.set == s], found)
                for s in SETS
                for h in halves
            }
            section_out[f"{mode}: {w}, by half"] = by_half
            rows.append([w, *[by_half[f"{s} {h}"]["recall@5"] for s in SETS for h in halves]])
        report.table(
            f"section weight, {mode} recall@5 by half",
            ["weight", *[f"{s} {h}" for s in SETS for h in halves]],
            rows,
        )
    out["section_context"] = section_out

    # 3. Rocchio feedback on the query vector, each list it changes and hybrid, chosen on one
    # half and reported on the other (None: no feedback, the shipped search).
    feedback_out: dict[str, Any] = {}
    for mode in ("vector", "hybrid"):
        by_setting: dict[Feedback | None, Ranks] = {
            None: vector_ranks if mode == "vector" else variant_ranks[VARIANTS[0].name, mode]
        }
        for setting in FEEDBACK:
            by_setting[setting] = ranks(
                snapshot, qs, mode, params, DEFAULT_FUSION, with_feedback(setting)
            )
        for chosen_on, reported_on in (("A", "B"), ("B", "A")):
            best, _ = _choose(halves[chosen_on], by_setting, None)
            feedback_out[f"{mode}: chosen on {chosen_on}"] = {
                "chosen": None if best is None else [best.blocks, best.weight],
                "held-out": {
                    s: rates([q for q in halves[reported_on] if q.set == s], by_setting[best])
                    for s in SETS
                },
                "held-out, shipped": {
                    s: rates([q for q in halves[reported_on] if q.set == s], by_setting[None])
                    for s in SETS
                },
            }
        for fb, found in by_setting.items():
            name = "none" if fb is None else f"m={fb.blocks} b={fb.weight}"
            feedback_out[f"{mode}: {name}, by half"] = {
                f"{s} {h}": rates([q for q in halves[h] if q.set == s], found)
                for s in SETS
                for h in halves
            }
    out["vector_feedback"] = feedback_out

    # 4. The shipped ranking by kind: each list alone and hybrid.
    shipped = {
        "keyword": variant_ranks[VARIANTS[0].name, "keyword"],
        "vector": vector_ranks,
        "hybrid": variant_ranks[VARIANTS[0].name, "hybrid"],
    }
    out["by_kind"] = {
        s: {mode: by_kind([q for q in qs if q.set == s], shipped[mode]) for mode in MODES}
        for s in SETS
    }
    out["missed_hybrid"] = {
        s: [
            q.item.id for q in qs if q.set == s and shipped["hybrid"][f"{s}/{q.item.id}"][0] is None
        ]
        for s in SETS
    }
    for s in SETS:
        for mode in MODES:
            table = out["by_kind"][s][mode]
            rows = [
                [kind, *[r[m] for m in ("n", "recall@5", "recall@10", "mrr")]]
                for kind, r in table.items()
            ]
            report.table(f"{s} set, {mode}", ["kind", "n", "recall@5", "recall@10", "MRR"], rows)
        report.figure(f"{s} hybrid recall@5", out["by_kind"][s]["hybrid"]["all"]["recall@5"])
    return out


def retrieval_quality(report: Report, quick: bool) -> None:
    """`citewise bench retrieval_quality`: import the shared corpus into a temporary data
    directory (about 7 minutes on 2 cores, most of it embedding), then measure."""
    from actors.app import App
    from actors.catalog import Catalog
    from engine.config import parse_config
    from engine.paths import DataDir

    report.title = "retrieval quality: lists, keyword variants and fusion on held-apart halves"
    with tempfile.TemporaryDirectory(prefix="citewise-quality-home-") as home:
        app = App(DataDir(Path(home)), parse_config({}, {}))

        async def go() -> str | None:
            try:
                return (await app.import_paths([CORPUS / "docs"])).status
            finally:
                await app.aclose()

        status = anyio.run(go, backend="trio")
        if status != "ready":
            raise SystemExit(f"importing the shared corpus ended {status}")
        with Catalog(DataDir(Path(home)), "default").pin_active() as snap:
            assert snap is not None
            report.figures["quality"] = measure(snap, report)


def main(argv: Sequence[str] | None = None) -> int:
    from actors.catalog import Catalog
    from engine.paths import DataDir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="data directory with the corpus")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    report = Report("retrieval_quality", "retrieval quality")
    with Catalog(DataDir(args.home), "default").pin_active() as snap:
        if snap is None:
            raise SystemExit(f"{args.home} has no active snapshot")
        figures = measure(snap, report)
    text = json.dumps(figures, indent=1, ensure_ascii=False)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    print(text)
    for table in report.tables:
        print(f"\n{table['title']}")
        print("  ".join(f"{h:>13}" for h in table["header"]))
        for row in table["rows"]:
            print("  ".join(f"{c!s:>13}" for c in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
