"""20 questions at once through the UI's actors while an import runs: none is lost.

Every question ends with a termination reason, has its trace (complete, not partial) and its
conversation turn, and the import finishes. The loop lag and memory figures are measured (with
targets) by bench/bench_load.py; here they are only computed.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.hardening.load_run import run_load, servers

QUESTIONS = 20


def test_twenty_questions_during_an_import_all_end_traced_and_stored(tmp_path: Path) -> None:
    with servers() as urls:
        result = anyio.run(
            lambda: run_load(tmp_path / "home", urls, questions=QUESTIONS, more_docs=4),
            backend="asyncio",  # the UI's loop (NiceGUI runs on asyncio)
        )
    assert result.errors == []
    assert result.without_reason == 0
    assert sum(result.termination_reasons.values()) == QUESTIONS
    assert result.termination_reasons == {"finished": QUESTIONS}
    assert result.traces_missing == [] and result.traces_partial == []
    assert result.turns_missing == []
    assert result.import_status == "ready" and result.import_documents == 4
    assert len(result.lag_ms) > 10  # the sampler ran while the load did
