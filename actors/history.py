"""Earlier answers read again: their citations resolved in the snapshot each one used."""

from __future__ import annotations

from actors.catalog import Catalog
from engine.harness import Citation, Evidence, MarkerNumbers
from engine.harness.citations import cited, resolve


def history_citations(catalog: Catalog, answer: str, snapshot_id: str | None) -> list[Citation]:
    """The citations of an earlier answer, looked up again in the snapshot it used.

    Which blocks that request had retrieved is not kept with the conversation, so a citation
    counts as valid here when its block exists in that snapshot."""
    if snapshot_id is None or catalog.manifest(snapshot_id) is None:
        return []
    with catalog.pinned(snapshot_id) as snap:
        return resolve(answer, cited_evidence(answer), snap)


def numbered(answer: str) -> str:
    """An earlier answer with its citation markers shown as [n]."""
    numbers = MarkerNumbers(cited_evidence(answer))
    return numbers.feed(answer) + numbers.flush()


def cited_evidence(answer: str) -> Evidence:
    """Every block an answer's markers cite, as evidence seen (the answer is from history)."""
    evidence = Evidence()
    for item, _ in cited(answer):
        doc_id, _, block_id = item.partition("#")
        evidence.add(doc_id, block_id, "history")
    return evidence
