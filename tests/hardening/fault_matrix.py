"""The provider fault matrix: every fault the loopback chat and embedding servers can inject,
the status Citewise must give for it, and one runner per surface that drives the real app and
checks every invariant, returning a Verdict (problems empty = the fault was handled).

Shared by tests/hardening/test_provider_faults.py and bench/bench_faults.py. Invariants per
fault: the documented error code and termination reason, at most one retry (server hits are
counted, not trusted from our own counters), a message that says what to do, a trace with the
termination reason, no key in any request body, and never an answer the model did not give
from returned evidence (a cut stream is retracted, the stored conversation keeps no answer).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.app import App
from actors.asking import ask
from actors.conversations import ConversationStore
from actors.tracing import get_trace, trace_writer, traced
from engine.harness import (
    AnswerDelta,
    AnswerRetracted,
    Budgets,
    Event,
    Limits,
    ModelCallFinished,
    RequestFinished,
    ToolCallFinished,
)
from engine.trace import model as m
from tests.corpus import make_app, run_import
from tests.servers import chat_server as cs
from tests.servers import embedding_server as es

CHAT_KEY = "sk-canary-chat-4b7e19d2a0c5f863"
EMBEDDING_KEY = "sk-canary-embed-8e21c4a7f90b3d15"
TIMEOUT_S = 0.6  # the providers' timeout in the matrix; a Delay of 4× it is a timeout
RETRY_AFTER_S = 1  # what a scripted 429 asks for
QUESTION = "Which river carries the most water?"
ANSWER_PREFIX = "The Amazon carries the most water"
BASE_DOC = (
    "# Rivers\n\n## Amazon\n\nThe Amazon carries more water than any other river on Earth.\n\n"
    "## Nile\n\nThe Nile flows north through eleven countries to the Mediterranean.\n"
)
# Three sections, so three blocks: with batch_size 2 the document needs two embedding batches.
TARGET_MARKER = "QUOKKA9917"
TARGET_DOC = (
    f"# Lakes\n\n## Baikal\n\nLake Baikal is the deepest lake ({TARGET_MARKER}).\n\n"
    "## Titicaca\n\nLake Titicaca lies high in the Andes.\n\n"
    "## 贝加尔湖\n\n贝加尔湖是世界上最深的湖泊。\n"
)
_CITATION = re.compile(r'"citation": ?"([^"]+)"')


@dataclass(frozen=True)
class Fault:
    name: str
    make: Callable[[], Any]  # a fresh scripted reply of the server
    code: str  # the client's documented error code
    retryable: bool
    hint: str  # words the user-facing message must contain (what to do)


def _cut_finish(cleanly: bool) -> cs.Text:
    answer = f"{ANSWER_PREFIX}, as the evidence shows in some detail " * 4
    return cs.Text(
        f"Thought: enough.\nAction: Finish[{answer}]",
        chunk_chars=8,
        cut_after_chunks=14,
        cut_cleanly=cleanly,
    )


_ERROR_EVENT = (
    b'data: {"choices": [{"index": 0, "delta": {"content": "Thought: x\\nAction: Finish[par"}}]}'
    b'\n\ndata: {"error": {"message": "upstream overloaded"}}\n\n'
)

CHAT_FAULTS: tuple[Fault, ...] = (
    Fault(
        "401", lambda: cs.Status(401, "Authentication Fails"), "unauthorized", False, "keys test"
    ),
    Fault("402", lambda: cs.Status(402, "Insufficient Balance"), "no_balance", False, "top up"),
    Fault(
        "429 Retry-After",
        lambda: cs.Status(429, "Rate limit reached", retry_after=str(RETRY_AFTER_S)),
        "rate_limited",
        True,
        "wait",
    ),
    Fault("500", lambda: cs.Status(500, "Internal error"), "server_error", True, "try again"),
    Fault("503", lambda: cs.Status(503, "Server overloaded"), "server_error", True, "try again"),
    Fault(
        "timeout",
        lambda: cs.Delay(TIMEOUT_S * 4, cs.Text("late")),
        "timeout",
        True,
        "chat.timeout_s",
    ),
    Fault("connection reset", lambda: cs.Drop(reset=True), "connection", True, "network"),
    Fault("connection closed", lambda: cs.Drop(), "connection", True, "network"),
    Fault("stream cut mid-answer", lambda: _cut_finish(False), "connection", True, "ask again"),
    Fault("stream ends without [DONE]", lambda: _cut_finish(True), "connection", True, "ask again"),
    Fault(
        "error event mid-stream", lambda: cs.Raw(_ERROR_EVENT), "server_error", True, "ask again"
    ),
    Fault("malformed JSON", lambda: cs.Malformed(), "bad_response", True, "chat.base_url"),
    Fault("empty choices", lambda: cs.EmptyChoices(), "bad_response", True, "chat.base_url"),
)

EMBEDDING_FAULTS: tuple[Fault, ...] = (
    Fault("401", lambda: es.Status(401, "invalid key"), "unauthorized", False, "embedding key"),
    Fault("402", lambda: es.Status(402, "no credit"), "no_balance", False, "top up"),
    Fault(
        "429 insufficient_quota",
        lambda: es.Status(429, "quota exceeded", code="insufficient_quota"),
        "quota",
        False,
        "billing",
    ),
    Fault(
        "429 Retry-After",
        lambda: es.Status(429, "slow down", retry_after=str(RETRY_AFTER_S)),
        "rate_limited",
        True,
        "retries once",
    ),
    Fault("500", lambda: es.Status(500, "boom"), "server_error", True, "try again"),
    Fault(
        "timeout",
        lambda: es.Delay(TIMEOUT_S * 4),
        "timeout",
        True,
        "embedding.timeout_s",
    ),
    Fault("connection reset", lambda: es.Drop(reset=True), "connection", True, "network"),
    Fault("malformed JSON", lambda: es.Malformed(), "bad_response", False, "embedding.base_url"),
    Fault(
        "wrong dimension",
        lambda: es.WrongDimension(),
        "wrong_dimension",
        False,
        "embedding.dimensions",
    ),
    Fault("wrong count", lambda: es.WrongCount(), "bad_response", False, "embedding.base_url"),
)


@dataclass
class Verdict:
    """What one injected fault led to. `problems` lists every invariant that did not hold."""

    fault: str
    surface: str
    status: str  # termination reason / failure reason / tool outcome
    code: str  # the error code Citewise reported
    hits: int  # requests the faulty server received for the faulted step
    retries: int
    faults_injected: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def check(self, holds: bool, what: str) -> None:
        if not holds:
            self.problems.append(what)


def write_docs(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def embedded_library(root: Path, server: es.EmbeddingServer) -> Path:
    """A data directory with BASE_DOC imported through the embedding server, as query_case
    imports it (each case then starts from a copy). Needs EMBEDDING_KEY in the environment."""
    home = root / "home"
    result = run_import(
        embedding_app(home, server), [write_docs(root / "docs", {"rivers.md": BASE_DOC})]
    )
    assert result.status == "ready", result
    return home


def build_library(root: Path) -> Path:
    """A data directory with BASE_DOC imported with the built-in model (for chat faults)."""
    home = root / "home"
    result = run_import(make_app(home), [write_docs(root / "docs", {"rivers.md": BASE_DOC})])
    assert result.status == "ready", result
    return home


def search_then_cite(body: dict[str, Any]) -> cs.Text:
    """Turn 1 searches; a later turn cites the first block of the last observation."""
    found = _CITATION.search(body["messages"][-1]["content"])
    if found is None:
        args = json.dumps({"query": "river carries the most water"})
        return cs.Text(f"Thought: I should search.\nAction: search_blocks[{args}]")
    return cs.Text(f"Thought: found it.\nAction: Finish[{ANSWER_PREFIX}.【来源:{found.group(1)}】]")


def _expected_hits(fault: Fault) -> int:
    return 2 if fault.retryable else 1


def _limits(app: App) -> Limits:
    return Limits(budgets=Budgets.from_config(app.config), retry_delay_s=0.0)


async def _ask(app: App) -> tuple[RequestFinished, list[Event], str]:
    events: list[Event] = []

    async def collect(event: Event) -> None:
        events.append(event)

    async with trace_writer(app) as writer:
        result = await ask(app, QUESTION, on_event=traced(writer, collect), limits=_limits(app))
    return result.finished, events, result.conversation_id


def _no_key_in_bodies(v: Verdict, bodies: list[bytes]) -> None:
    for key in (CHAT_KEY, EMBEDDING_KEY):
        v.check(all(key.encode() not in b for b in bodies), "an API key reached a request body")


def _retracted_after_deltas(v: Verdict, events: list[Event]) -> None:
    """Any answer text streamed by a failed call is retracted before anything else streams."""
    shown: list[str] = []
    for event in events:
        if isinstance(event, AnswerDelta):
            shown.append(event.text)
        elif isinstance(event, AnswerRetracted):
            shown.clear()
    finished = events[-1]
    assert isinstance(finished, RequestFinished)
    if finished.answer is None:
        v.check(not shown, "streamed answer text was left on screen without a retraction")
    else:
        v.check("".join(shown) == finished.answer, "what streamed is not the final answer")


def _gap_ok(times: list[float], fault: Fault) -> bool:
    if "Retry-After" not in fault.name or len(times) < 2:
        return True
    return times[1] - times[0] >= RETRY_AFTER_S * 0.9


async def chat_case(
    home: Path, server: cs.ChatServer, fault: Fault, *, persistent: bool
) -> Verdict:
    """Turn 1 searches; the answer turn meets `fault` (twice when persistent, else once and then
    a good answer). Needs CHAT_KEY in the environment (the app's own client reads it)."""
    app = make_app(
        home, chat={"base_url": server.url, "timeout_s": TIMEOUT_S}, trace={"mode": "full"}
    )
    server.api_key = CHAT_KEY
    faulted = [fault.make()]
    if persistent or not fault.retryable:
        faulted.append(fault.make())
    server.script(search_then_cite, *faulted, search_then_cite)
    try:
        finished, events, cid = await _ask(app)
        record = get_trace(app, finished.request_id)
        turns = ConversationStore(app.data, "default").load(cid)
    finally:
        await app.aclose()
    requests = server.requests
    hits = len(requests) - 1  # the first request is the search turn
    failed = [e for e in events if isinstance(e, ModelCallFinished) and not e.ok]
    code = failed[0].error_code or "" if failed else ""
    v = Verdict(
        fault=fault.name,
        surface="chat, persistent" if persistent else "chat, once",
        status=finished.termination_reason,
        code=code,
        hits=hits,
        retries=finished.counters.model_retries,
        faults_injected=min(len(faulted), hits),
    )
    v.check(code == fault.code, f"error code {code!r}, expected {fault.code!r}")
    v.check(hits <= 2, f"{hits} requests for one model turn: more than one retry")
    v.check(_gap_ok([r.received_at for r in requests[1:]], fault), "Retry-After not honoured")
    succeeds = fault.retryable and not persistent
    if succeeds:
        v.check(hits == 2 and v.retries == 1, f"expected one retry, saw {hits} requests")
        v.check(finished.termination_reason == "finished", "the retried request did not finish")
        answer = finished.answer or ""
        v.check(answer.startswith(ANSWER_PREFIX), "the answer is not the model's answer")
        v.check(
            bool(finished.citations) and all(c.valid for c in finished.citations),
            "the answer's citations are not all returned evidence",
        )
    else:
        v.check(hits == _expected_hits(fault), f"{hits} requests, expected {_expected_hits(fault)}")
        v.check(finished.termination_reason == "model_error", "not ended as model_error")
        v.check(finished.answer is None, "an answer was given although the model call failed")
        v.check(fault.hint in finished.message, f"the message does not say {fault.hint!r}")
        v.check(bool(turns) and turns[-1].answer is None, "the conversation stored an answer")
        final = [s for s in record.spans if s.kind == "final"]
        v.check(
            bool(final) and not any(a.kind == "answer" for a in final[0].artifacts),
            "the trace stored an answer artifact",
        )
    _retracted_after_deltas(v, events)
    v.check(
        record.summary.termination_reason == finished.termination_reason,
        "the trace does not record the termination reason",
    )
    errors = [s for s in record.spans if s.kind == "llm_call" and s.status == "error"]
    v.check(
        bool(errors) and errors[0].attributes.get(m.ERROR_CODE) == fault.code,
        "the trace has no failed llm_call span with the error code",
    )
    _no_key_in_bodies(v, [r.raw for r in requests])
    return v


def embedding_app(home: Path, server: es.EmbeddingServer, chat_url: str = "") -> App:
    chat = {"base_url": chat_url, "timeout_s": 5.0} if chat_url else {}
    return make_app(
        home,
        embedding={
            "provider": "openai_compatible",
            "base_url": server.url,
            "model": "scripted",
            "dimensions": es.DEFAULT_DIMENSIONS,
            "batch_size": 2,
            "concurrency": 1,
            "timeout_s": TIMEOUT_S,
        },
        trace={"mode": "full"},
        **({"chat": chat} if chat else {}),
    )


async def import_case(
    root: Path, server: es.EmbeddingServer, fault: Fault, *, persistent: bool
) -> Verdict:
    """rivers.md is imported first; then lakes.md (two batches) meets `fault` on its second
    batch. Needs EMBEDDING_KEY in the environment."""
    home = root / "home"
    app = embedding_app(home, server)
    try:
        first = await app.import_paths([write_docs(root / "base", {"rivers.md": BASE_DOC})])
        assert first.status == "ready", first
        before = len(server.requests)
        faulted = [fault.make()]
        if persistent or not fault.retryable:
            faulted.append(fault.make())
        server.script(es.Ok(), *faulted)
        result = await app.import_paths([write_docs(root / "new", {"lakes.md": TARGET_DOC})])
        catalog = app.catalog()
        with catalog.pin_active() as snap:
            assert snap is not None
            sources = sorted(d.source for d in snap.manifest.documents)
            marker_blocks = sum(TARGET_MARKER in snap.block(i).text for i in range(snap.n_blocks))
            status = snap.manifest.status
    finally:
        await app.aclose()
    hits = len(server.requests) - before - 1  # the first batch of lakes.md succeeded
    failed = {f.source: f for f in result.failed_documents}
    lakes = failed.get("lakes.md")
    v = Verdict(
        fault=fault.name,
        surface="import, persistent" if persistent else "import, once",
        status=f"{lakes.stage}:{lakes.reason}" if lakes else str(result.status),
        code=lakes.reason if lakes else "",
        hits=hits,
        retries=max(hits - 1, 0),
        faults_injected=min(len(faulted), hits),
    )
    v.check(hits <= 2, f"{hits} requests for one batch: more than one retry")
    v.check(
        _gap_ok([r.received_at for r in server.requests[before + 1 :]], fault),
        "Retry-After not honoured",
    )
    _no_key_in_bodies(v, [r.raw for r in server.requests])
    if fault.retryable and not persistent:
        v.check(hits == 2, f"expected one retry, saw {hits} requests")
        v.check(result.status == "ready" and not failed, "the retried import did not land whole")
        v.check(sources == ["lakes.md", "rivers.md"], f"documents {sources}")
        v.check(marker_blocks == 1, "lakes.md is not searchable after the import")
        return v
    v.check(hits == _expected_hits(fault), f"{hits} requests, expected {_expected_hits(fault)}")
    v.check(lakes is not None, "lakes.md is not listed as failed")
    if lakes is not None:
        v.check(lakes.stage == "embed", f"stage {lakes.stage!r}, expected 'embed'")
        v.check(lakes.reason == fault.code, f"reason {lakes.reason!r}, expected {fault.code!r}")
        v.check(fault.hint in lakes.message, f"the message does not say {fault.hint!r}")
    v.check(result.status == "ready_partial" and status == "ready_partial", "not ready_partial")
    v.check(sources == ["rivers.md"], f"half-imported: the snapshot holds {sources}")
    v.check(marker_blocks == 0, "a block of the failed document is in the snapshot")
    return v


def search_or_admit_failure(body: dict[str, Any]) -> cs.Text:
    """Like search_then_cite, but when the search failed the model says so and guesses a
    citation (which must be flagged: it was never returned)."""
    last = body["messages"][-1]["content"]
    if '"upstream_unavailable"' in last:
        return cs.Text(
            "Thought: the search failed.\nAction: Finish[The search is unavailable right now."
            "【来源:guessed#b0001】]"
        )
    return search_then_cite(body)


async def query_case(
    root: Path,
    server: es.EmbeddingServer,
    chat: cs.ChatServer,
    fault: Fault,
    *,
    persistent: bool,
    base: Path | None = None,
) -> Verdict:
    """rivers.md is imported through the embedding server (or `base`, a data directory of
    `embedded_library`, is copied); then a question's search_blocks meets `fault` while
    embedding the query. Needs both canary keys in the environment."""
    home = root / "home"
    if base is not None:
        shutil.copytree(base, home)
    app = embedding_app(home, server, chat.url)
    chat.api_key = CHAT_KEY
    try:
        if base is None:
            first = await app.import_paths([write_docs(root / "base", {"rivers.md": BASE_DOC})])
            assert first.status == "ready", first
        before = len(server.requests)
        faulted = [fault.make()]
        if persistent or not fault.retryable:
            faulted.append(fault.make())
        server.script(*faulted)
        chat.script(search_or_admit_failure, search_or_admit_failure)
        finished, events, _ = await _ask(app)
        record = get_trace(app, finished.request_id)
    finally:
        await app.aclose()
    hits = len(server.requests) - before
    tools = [e for e in events if isinstance(e, ToolCallFinished)]
    search = tools[0] if tools else None
    v = Verdict(
        fault=fault.name,
        surface="query, persistent" if persistent else "query, once",
        status=search.outcome if search else "no tool call",
        code=finished.termination_reason,
        hits=hits,
        retries=finished.counters.tool_retries,
        faults_injected=min(len(faulted), hits),
    )
    v.check(search is not None and search.tool == "search_blocks", "search_blocks did not run")
    v.check(hits <= 2, f"{hits} embedding requests for one tool call: more than one retry")
    v.check(
        _gap_ok([r.received_at for r in server.requests[before:]], fault),
        "Retry-After not honoured",
    )
    v.check(finished.termination_reason == "finished", "the model could not finish")
    _no_key_in_bodies(v, [r.raw for r in chat.requests] + [r.raw for r in server.requests])
    observed = chat.requests[1].body["messages"][-1]["content"] if len(chat.requests) > 1 else ""
    if fault.retryable and not persistent:
        v.check(hits == 2 and v.retries == 1, f"expected one retry, saw {hits} requests")
        v.check(search is not None and search.outcome == "ok", "the retried search failed")
        v.check(
            bool(finished.citations) and all(c.valid for c in finished.citations),
            "the answer's citations are not all returned evidence",
        )
        return v
    v.check(hits == _expected_hits(fault), f"{hits} requests, expected {_expected_hits(fault)}")
    v.check(
        search is not None and search.outcome == "upstream_unavailable",
        "search_blocks did not fail with upstream_unavailable",
    )
    v.check(fault.hint in observed, f"the model was not told {fault.hint!r}")
    v.check(
        bool(finished.citations) and not any(c.valid for c in finished.citations),
        "a citation to a block never returned was not flagged",
    )
    spans = [s for s in record.spans if s.kind == "tool_call"]
    v.check(
        bool(spans) and spans[0].attributes.get(m.ERROR_CODE) == "upstream_unavailable",
        "the trace does not record upstream_unavailable",
    )
    return v
