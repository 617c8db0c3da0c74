"""Provider faults against the loopback chat and embedding servers, through the real app.

Each fault of tests/hardening/fault_matrix.py is injected on every surface it applies to (a
question's answer turn, an import's embedding batch, a question's query embedding), once and
persistently. The verdict checks the documented status, at most one retry by the servers' own
count, a message that says what to do, the trace, the stored conversation, and that no answer
appears that the model did not give from returned evidence. bench_faults runs the same matrix.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hardening.fault_matrix import (
    CHAT_FAULTS,
    CHAT_KEY,
    EMBEDDING_FAULTS,
    EMBEDDING_KEY,
    Fault,
    build_library,
    chat_case,
    embedded_library,
    import_case,
    query_case,
)
from tests.servers.chat_server import ChatServer
from tests.servers.embedding_server import EmbeddingServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: started first (tests/conftest.py)


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.fixture(autouse=True)
def canary_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", CHAT_KEY)
    monkeypatch.setenv("CITEWISE_EMBEDDING_API_KEY", EMBEDDING_KEY)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("faults-library"))


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """rivers.md imported through an embedding server once: each query case copies it (an
    import in the case's own event loop would start parse workers for that loop alone)."""
    server = EmbeddingServer().start()
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CITEWISE_EMBEDDING_API_KEY", EMBEDDING_KEY)
            yield embedded_library(tmp_path_factory.mktemp("faults-embedded"), server)
    finally:
        server.stop()


def _cases(faults: tuple[Fault, ...]) -> list[object]:
    out: list[object] = []
    for fault in faults:
        out.append(pytest.param(fault, True, id=f"{fault.name}-persistent"))
        if fault.retryable:
            out.append(pytest.param(fault, False, id=f"{fault.name}-once"))
    return out


@pytest.mark.parametrize(("fault", "persistent"), _cases(CHAT_FAULTS))
async def test_a_chat_fault_gives_its_status_one_retry_at_most_and_no_invented_answer(
    fault: Fault, persistent: bool, library: Path, tmp_path: Path, chat_server: ChatServer
) -> None:
    home = Path(shutil.copytree(library, tmp_path / "home"))
    verdict = await chat_case(home, chat_server, fault, persistent=persistent)
    assert verdict.problems == [], verdict
    if persistent or not fault.retryable:
        assert verdict.status == "model_error" and verdict.code == fault.code
    else:
        assert verdict.status == "finished" and verdict.retries == 1


@pytest.mark.parametrize(("fault", "persistent"), _cases(EMBEDDING_FAULTS))
async def test_an_embedding_fault_fails_the_document_whole_with_stage_and_reason(
    fault: Fault, persistent: bool, tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    verdict = await import_case(tmp_path, embedding_server, fault, persistent=persistent)
    assert verdict.problems == [], verdict
    if persistent or not fault.retryable:
        assert verdict.status == f"embed:{fault.code}"


@pytest.mark.parametrize(("fault", "persistent"), _cases(EMBEDDING_FAULTS))
async def test_a_query_embedding_fault_is_upstream_unavailable_never_a_silent_fallback(
    fault: Fault,
    persistent: bool,
    embedded: Path,
    tmp_path: Path,
    embedding_server: EmbeddingServer,
    chat_server: ChatServer,
) -> None:
    verdict = await query_case(
        tmp_path, embedding_server, chat_server, fault, persistent=persistent, base=embedded
    )
    assert verdict.problems == [], verdict
    if persistent or not fault.retryable:
        assert verdict.status == "upstream_unavailable"
