"""`citewise prompts …` and `citewise eval …` against a small imported library and the scripted
loopback chat server: answer checks over N runs, flips, comparisons, freezing, promotion,
rollback, report files, trace links and exit codes."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from actors import App, AppError
from actors.catalog import Catalog
from actors.tracing import get_trace
from cli.evaluate import add_parsers
from engine.paths import DataDir
from tests.corpus import make_app, run_import
from tests.servers.chat_server import ChatServer, Reply, Status, Text

EVENTS_MD = (
    "# Node events\n\n## Max listeners\n\nBy default EventEmitters will print a warning if more "
    "than 10 listeners are added for a particular event. This is a useful default that helps "
    "finding memory leaks.\n\n## Error events\n\nWhen an error occurs the EventEmitter emits an "
    "'error' event.\n"
)
FLOATS_MD = "# 浮动体\n\n## 图片\n\n浮动体用于放置图片和表格，LaTeX 会自动决定它们的位置。\n"
QUOTE = "This is a useful default that helps finding"
FACT_Q = "How many listeners can an EventEmitter take before it warns, and why?"
ZH_Q = "浮动体是做什么用的？"
ABSENT_Q = "How do I pin a Node.js worker to one CPU core?"
TERSE = "Answer tersely."


def _gold_lines() -> list[dict[str, Any]]:
    return [
        {
            "id": "q-fact",
            "lang": "en",
            "kind": "fact",
            "question": FACT_Q,
            "documents": ["events.md"],
            "evidence": [{"document": "events.md", "page": None, "quote": QUOTE}],
            "answer_must_include": ["10", "memory leak"],
        },
        {
            "id": "q-zh",
            "lang": "zh",
            "kind": "paraphrase",
            "question": ZH_Q,
            "documents": ["floats.md"],
            "evidence": [
                {"document": "floats.md", "page": None, "quote": "浮动体用于放置图片和表格，LaTeX"}
            ],
            "answer_must_include": ["图片"],
        },
        {
            "id": "q-absent",
            "lang": "en",
            "kind": "absent",
            "question": ABSENT_Q,
            "documents": ["events.md"],
        },
    ]


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-eval")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS_MD, encoding="utf-8")
    (docs / "floats.md").write_text(FLOATS_MD, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


@pytest.fixture
def home(seed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the imported library, as CITEWISE_HOME, with the chat key in the environment."""
    target = tmp_path / "home"
    shutil.copytree(seed, target)
    for name in [n for n in os.environ if n.startswith("CITEWISE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CITEWISE_HOME", str(target))
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "sk-eval-test")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return target


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(json.dumps(g, ensure_ascii=False) for g in _gold_lines()) + "\n")
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run one command as `citewise` does (trio; AppError = exit 2); stdout as JSON if it is."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--collection", "-c")
    common.add_argument("--json", action="store_true")
    parser = argparse.ArgumentParser(prog="citewise")
    add_parsers(parser.add_subparsers(dest="command"), common)
    args = parser.parse_args(argv)

    async def go() -> int:
        app = App.from_environment()
        try:
            code: int = await args.func(app, args)
            return code
        finally:
            await app.aclose()

    try:
        code = anyio.run(go, backend="trio")
    except AppError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    captured = capsys.readouterr()
    out: Any = captured.out
    if "--json" in argv and captured.out.strip():
        out = json.loads(captured.out)
    return code, out, captured.err


Policy = Callable[[str, list[dict[str, Any]], str, int], str]


def agent(policy: Policy) -> Callable[[dict[str, Any]], Reply]:
    """A scripted model: it searches for the question, then finishes with `policy(question,
    blocks it was shown, system prompt, answer number)`; it declines the absent question."""
    answers = [0]

    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        system = messages[0]["content"]
        asked = [
            m["content"] for m in messages if m["role"] == "user" and "<question>" in m["content"]
        ]
        question = re.search(r"<question>\n(.*?)\n</question>", asked[-1], re.S).group(1)  # type: ignore[union-attr]
        last = messages[-1]["content"]
        if question == ABSENT_Q:
            return Text(
                "Thought: not in scope.\nAction: Finish[The documents do not cover CPU affinity.]"
            )
        if not last.startswith("Observation from the system"):
            return Text(
                f"Thought: search.\nAction: search_blocks[{json.dumps({'query': question})}]"
            )
        observation = json.loads(last.splitlines()[-2])
        answers[0] += 1
        answer = policy(question, observation["payload"]["blocks"], system, answers[0])
        return Text(f"Thought: enough.\nAction: Finish[{answer}]")

    return reply


def cite(blocks: list[dict[str, Any]], fragment: str) -> str:
    return str(next(b["citation"] for b in blocks if fragment in b["text"]))


def honest(question: str, blocks: list[dict[str, Any]], system: str, n: int) -> str:
    if question == ZH_Q:
        return f"浮动体用于放置图片和表格。【来源:{cite(blocks, '浮动体用于')}】"
    return f"Ten (10); the warning helps find a memory leak.【来源:{cite(blocks, QUOTE)}】"


def script(server: ChatServer, policy: Policy, calls: int = 40) -> None:
    server.script(*[agent(policy)] * calls)


def test_a_model_citing_what_it_was_shown_passes_and_every_row_links_to_its_trace(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    script(chat_server, honest)
    code, doc, err = cli(capsys, "eval", str(gold), "-n", "2", "--json")
    assert code == 0, err
    assert {"retrieval", "answers", "runs", "report_files"} <= doc.keys() and doc["runs"] == 2
    answers = doc["answers"]
    assert answers["pass_rate"] == 1.0 and answers["flips"] == []
    assert {k: v["pass_rate"] for k, v in answers["by_kind"].items()} == {
        "fact": 1.0,
        "paraphrase": 1.0,
        "absent": 1.0,
    }
    assert answers["cost"] > 0 and answers["tokens"]["total"] > 0
    assert answers["bundle"] == "baseline@1.1.0"
    assert doc["retrieval"]["recall@5"] == 1.0
    report, markdown, png = (Path(f) for f in doc["report_files"])
    assert json.loads(report.read_text(encoding="utf-8"))["answers"]["pass_rate"] == 1.0
    with Image.open(png) as image:
        image.verify()
    app = App.from_environment()
    checks = [c for row in answers["rows"] for c in row["checks"]]
    assert len(checks) == 6
    for check in checks:
        assert f"`citewise trace show {check['trace_id']}`" in markdown.read_text(encoding="utf-8")
        question = get_trace(app, check["trace_id"]).summary.question
        assert question in (FACT_Q, ZH_Q, ABSENT_Q)


def test_citing_a_block_that_was_never_returned_fails_the_check(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    with Catalog(DataDir(home), "default").pin_active() as snapshot:
        assert snapshot is not None
        floats = next(
            snapshot.block(o).citation
            for o in range(snapshot.n_blocks)
            if "浮动体用于" in snapshot.block(o).text
        )
        events_doc = next(d.doc_id for d in snapshot.documents if d.source_label == "events.md")

    def scoped(body: dict[str, Any]) -> Reply:
        """Searches only events.md, then cites the 浮动体 block it was never shown."""
        last = body["messages"][-1]["content"]
        if last.startswith("Observation from the system"):
            return Text(f"Thought: t\nAction: Finish[浮动体放图片。【来源:{floats}】]")
        args = {"query": "浮动体", "doc_ids": [events_doc]}
        return Text(f"Thought: t\nAction: search_blocks[{json.dumps(args)}]")

    lines = [g for g in _gold_lines() if g["id"] == "q-zh"]
    gold.write_text(json.dumps(lines[0], ensure_ascii=False) + "\n", encoding="utf-8")
    chat_server.script(scoped, scoped)
    code, doc, _ = cli(capsys, "eval", str(gold), "--json")
    assert code == 0  # the evaluation ran; the answer failed
    (row,) = doc["answers"]["rows"]
    (check,) = row["checks"]
    assert not check["passed"]
    assert check["failures"] == ["invalid_citation", "evidence_not_cited"]
    assert check["evidence_layer"] == "not_retrieved"


def test_a_question_passing_in_some_runs_and_failing_in_others_is_a_flip(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)

    def forgetful(question: str, blocks: list[dict[str, Any]], system: str, n: int) -> str:
        answer = honest(question, blocks, system, n)
        return answer.replace(" memory leak", " problem") if n == 2 else answer

    script(chat_server, forgetful)
    code, doc, _ = cli(capsys, "eval", str(gold), "-n", "3", "--json")
    assert code == 0
    answers = doc["answers"]
    assert answers["flips"] == ["q-fact"]
    fact = answers["by_kind"]["fact"]
    assert (fact["runs"], fact["passed_runs"], fact["flips"]) == (3, 2, 1)
    assert answers["failure_types"] == {"fact_missing": 1}
    outcomes = {row["id"]: row["outcome"] for row in answers["rows"]}
    assert outcomes == {"q-fact": "flaky", "q-zh": "pass", "q-absent": "pass"}


def test_compare_runs_two_bundles_on_the_same_snapshot_and_lists_changed_questions(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    code, created, _ = cli(
        capsys, "prompts", "new", "--from", "baseline", "--id", "terse", "--json"
    )
    assert code == 0 and created["created"]["frozen"] is False
    system = Path(created["created"]["path"]) / "system.md"
    system.write_text(system.read_text(encoding="utf-8") + f"\n{TERSE}\n", encoding="utf-8")

    def by_bundle(question: str, blocks: list[dict[str, Any]], prompt: str, n: int) -> str:
        answer = honest(question, blocks, prompt, n)
        return (
            answer.replace("; the warning helps find a memory leak", "")
            if TERSE in prompt
            else answer
        )

    script(chat_server, by_bundle)
    code, doc, err = cli(capsys, "eval", str(gold), "--compare", "baseline", "terse@1", "--json")
    assert code == 0, err
    comparison = doc["compare"]["comparison"]
    assert (comparison["a"], comparison["b"]) == ("baseline@1.1.0", "terse@1")
    assert [(c["id"], c["a"], c["b"]) for c in comparison["changed"]] == [
        ("q-fact", "pass", "fail")
    ]
    assert comparison["regressed"] == ["q-fact"]
    manifest = doc["manifest"]
    assert [b["id"] for b in manifest["bundles"]] == ["baseline", "terse"]
    assert "froze terse@1" in err  # used for an evaluation: frozen automatically
    _, listed, _ = cli(capsys, "prompts", "list", "--json")
    status = {b["ref"]: b["status"] for b in listed["bundles"]}
    assert status["terse@1"] == "frozen"
    system.write_text(system.read_text(encoding="utf-8") + "More.\n", encoding="utf-8")
    code, _, err = cli(capsys, "eval", str(gold), "--bundle", "terse@1")
    assert code == 2 and "modified after freezing" in err


def test_prompts_promote_needs_yes_and_rollback_restores_the_previous_baseline(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, listed, _ = cli(capsys, "prompts", "list", "--json")
    assert code == 0 and listed["active"] == "baseline@1.1.0"
    cli(capsys, "prompts", "new", "--from", "baseline", "--json")
    code, _, err = cli(capsys, "prompts", "promote", "baseline-exp@1", "--yes")
    assert code == 2 and "not frozen" in err
    code, frozen, _ = cli(capsys, "prompts", "freeze", "baseline-exp@1", "--json")
    assert code == 0 and frozen["frozen"]["frozen"] is True
    code, _, err = cli(capsys, "prompts", "promote", "baseline-exp@1")
    assert code == 2 and "--yes" in err
    assert cli(capsys, "prompts", "list", "--json")[1]["active"] == "baseline@1.1.0"
    code, promoted, _ = cli(capsys, "prompts", "promote", "baseline-exp@1", "--yes", "--json")
    assert code == 0 and promoted["active"]["ref"] == "baseline-exp@1"
    assert promoted["previous"] == "baseline@1.1.0"
    code, diff, _ = cli(capsys, "prompts", "diff", "baseline", "baseline-exp@1", "--json")
    assert code == 0 and diff["templates"] == {}
    code, rolled, _ = cli(capsys, "prompts", "rollback", "--json")
    assert code == 0 and rolled["active"]["ref"] == "baseline@1.1.0"
    code, _, err = cli(capsys, "prompts", "rollback")
    assert code == 2 and "nothing to roll back" in err


def test_retrieval_only_needs_no_model_and_later_runs_name_the_results_they_invalidate(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    code, first, _ = cli(capsys, "eval", str(gold), "--retrieval-only", "--json")
    assert code == 0 and first["answers"] is None and first["runs"] == 0
    assert chat_server.requests == []
    retrieval = first["retrieval"]
    # Both questions' evidence is found; the Chinese one's block comes second, behind the other
    # block of its two-block document (ranking within one tiny document is not what is tested).
    assert retrieval["recall@5"] == retrieval["recall@10"] == 1.0 and retrieval["mrr"] >= 0.75
    assert retrieval["coverage_complete"] is None and retrieval["scan_ok"] is None
    script(chat_server, honest)
    code, second, _ = cli(capsys, "eval", str(gold), "--json")
    assert code == 0 and second["still_valid"] == [first["eval_id"]]
    cli(capsys, "prompts", "new", "--from", "baseline")
    cli(capsys, "prompts", "freeze", "baseline-exp@1")
    cli(capsys, "prompts", "promote", "baseline-exp@1", "--yes")
    code, third, _ = cli(capsys, "eval", str(gold), "--retrieval-only", "--json")
    assert code == 0
    assert third["still_valid"] == [first["eval_id"]]
    (invalid,) = third["invalidates"]
    assert invalid["eval_id"] == second["eval_id"] and invalid["retrieval"] == []
    assert invalid["answers"][0].startswith("prompt bundle baseline@1.1.0")


def test_usage_errors_exit_2_and_model_failures_make_a_partial_evaluation(
    home: Path,
    gold: Path,
    tmp_path: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "lang": "en", "kind": "fact", "question": "?"}\n')
    code, _, err = cli(capsys, "eval", str(bad))
    assert code == 2 and "bad.jsonl:1" in err
    code, _, err = cli(capsys, "eval", str(gold), "--bundle", "nope")
    assert code == 2 and "no prompt bundle 'nope'" in err
    code, _, err = cli(capsys, "eval", str(gold), "--snapshot", "s-none", "--retrieval-only")
    assert code == 2 and "no snapshot 's-none'" in err
    chat_server.script(Status(500), Status(500), *[agent(honest)] * 10)
    code, doc, _ = cli(capsys, "eval", str(gold), "--json")
    assert code == 3 and doc["status"] == "partial"
    first = doc["answers"]["rows"][0]["checks"][0]
    assert first["termination_reason"] == "model_error" and first["failures"] == ["no_answer"]


COVERAGE_Q = "Which sections does the Node events page have?"


def test_coverage_without_evidence_is_scored_on_its_sections_and_unknown_kinds_are_reported(
    home: Path,
    tmp_path: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GOLD-FORMAT.md lets a coverage question carry expected_sections and no quotes."""
    lines = [
        *_gold_lines(),
        {
            "id": "q-cover",
            "lang": "en",
            "kind": "coverage",
            "question": COVERAGE_Q,
            "documents": ["events.md"],
            "expected_sections": ["Max listeners", "Error events"],
        },
        {"id": "q-new", "lang": "en", "kind": "timeline", "question": "When?"},
    ]
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(json.dumps(g, ensure_ascii=False) for g in lines) + "\n")

    def sections(question: str, blocks: list[dict[str, Any]], system: str, n: int) -> str:
        if question == COVERAGE_Q:
            return "It has two sections: Max listeners and Error events."
        return honest(question, blocks, system, n)

    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    script(chat_server, sections)
    code, doc, err = cli(capsys, "eval", str(path), "--json")
    assert code == 0, err
    by_kind = doc["answers"]["by_kind"]
    assert by_kind["coverage"]["pass_rate"] == 1.0 and "timeline" not in by_kind
    assert doc["retrieval"]["coverage_complete"] == 1.0
    (warning,) = [w for w in doc["warnings"] if "timeline" in w]
    assert "q-new" in warning and "line 5" in warning
    assert not any(q["id"] == "q-cover" for q in doc["retrieval"]["rows"])  # no quotes: no recall


def test_baseline_1_1_0_is_evaluated_beside_1_0_0_and_only_it_names_the_languages(
    home: Path,
    gold: Path,
    chat_server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_BASE_URL", chat_server.url)
    systems: list[str] = []

    def recording(question: str, blocks: list[dict[str, Any]], system: str, n: int) -> str:
        systems.append(system)
        return honest(question, blocks, system, n)

    script(chat_server, recording)
    code, doc, err = cli(
        capsys, "eval", str(gold), "--compare", "baseline@1.0.0", "baseline@1.1.0", "--json"
    )
    assert code == 0, err
    comparison = doc["compare"]["comparison"]
    assert (comparison["a"], comparison["b"]) == ("baseline@1.0.0", "baseline@1.1.0")
    assert comparison["changed"] == [] and comparison["regressed"] == []
    assert doc["answers"]["pass_rate"] == doc["compare"]["answers_b"]["pass_rate"] == 1.0
    languages = "Languages of its documents: English (en): 1 document; Chinese (zh): 1 document."
    named = [s for s in systems if languages in s]
    assert named and len(named) == len(systems) // 2  # every 1.1.0 run, no 1.0.0 run
    assert all("search with a query\n   in the documents' language" in s for s in named)
