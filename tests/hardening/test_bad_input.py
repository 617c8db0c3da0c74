"""Bad input everywhere a person can type: settings (config.toml and the environment), the JSON
arguments of `citewise tool`, questions (CLI and the ask page), file names to import and
collection names.

Every case ends in a clear message (what happened, what to do) with the exit code of SPEC §12
(2 for invalid usage), never a traceback, a crash or lost data. Hypothesis drives the generated
cases; the named cases are the ones people actually produce.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from nicegui.testing import User

from cli.commands import main as citewise
from engine.config import Config, load_config, parse_config
from engine.errors import ConfigError, InvalidCollectionName
from engine.paths import check_collection_name
from tests.corpus import REPO, make_app, run_import
from tests.servers.chat_server import ChatServer, Text
from tests.web.conftest import (  # noqa: F401  (fixtures used by the ask-page tests)
    home_copy,
    imported_home,
    no_keys,
    service_for,
    ui_user,
)
from web.pages import register

pytestmark = pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)

SECTIONS = ["chat", "embedding", "budget", "retrieval", "ingest", "trace", "snapshots", "network"]
NO_TRACE = "Traceback"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEWISE_", "PYTEST_"))}
    env.update(
        CITEWISE_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", **extra
    )
    return env


def _cli(home: Path, *args: str | bytes, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=REPO,
        env=_env(home, **env),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=180,
    )


def _clear_error(stderr: str) -> None:
    """An error for a person: said once, on stderr, with no traceback or Python internals."""
    assert "error:" in stderr, stderr
    assert NO_TRACE not in stderr and "unexpected error" not in stderr, stderr
    assert 'File "' not in stderr


# -- settings ----------------------------------------------------------------------------------
CONFIG_CASES: list[tuple[str, str]] = [
    ("[chat]\ntimeout_s = nan\n", "chat.timeout_s"),
    ("[chat]\ntimeout_s = inf\n", "chat.timeout_s"),
    ("[chat]\ntimeout_s = -1\n", "chat.timeout_s"),
    ("[chat]\ntemperature = -inf\n", "chat.temperature"),
    ("[chat]\nmodel = ''\n", "not empty"),
    ("[chat]\nmodel = [1, 2]\n", "chat.model"),
    ("[chat]\nmodel = 1979-05-27T07:32:00Z\n", "chat.model"),
    ("[chat]\nbase_url = 'file:///etc/passwd'\n", "http:// or https://"),
    ("[chat]\nbase_url = 'http://a b'\n", "chat.base_url"),
    ("[chat.price]\noutput = nan\n", "chat.price.output"),
    ("[chat.price]\noutput = 1e300\n", "chat.price.output"),
    ("[chat.price]\nbogus = 1\n", "no key 'bogus'"),
    ("[chat]\nprice = 3\n", "chat.price"),
    ("[embedding]\nprovider = 'magic'\n", "'local', 'openai_compatible'"),
    ("[embedding]\ndimensions = 0\n", "embedding.dimensions"),
    ("[embedding]\nbatch_size = 1000000\n", "embedding.batch_size"),
    ("[budget]\nmax_tool_calls = -1\n", "budget.max_tool_calls"),
    ("[budget]\nmax_tool_calls = 'many'\n", "budget.max_tool_calls"),
    ("[budget]\nmax_tool_calls = true\n", "budget.max_tool_calls"),
    ("[budget]\nmax_context_tokens = 99999999999999999999\n", "budget.max_context_tokens"),
    ("[budget]\nmax_context_tokens = 500000\n", "must not exceed"),
    ("[retrieval]\ntop_k = 0\n", "retrieval.top_k"),
    ("[retrieval]\nbm25_b = 1.5\n", "retrieval.bm25_b"),
    ("[retrieval]\nexact_search_max_blocks = 9223372036854775807\n", "exact_search_max_blocks"),
    ("[ingest]\nmax_file_megabytes = 9223372036854775807\n", "ingest.max_file_megabytes"),
    ("[ingest]\nparse_workers = 0\n", "ingest.parse_workers"),
    ("[trace]\nmode = 'FULL'\n", "'full', 'metadata'"),
    ("[trace]\nretention_days = 9223372036854775807\n", "trace.retention_days"),
    ("[trace]\nmax_megabytes = 9223372036854775807\n", "trace.max_megabytes"),
    ("[snapshots]\nkeep_last = 0\n", "snapshots.keep_last"),
    ("[snapshots]\nkeep_days = 1000000\n", "snapshots.keep_days"),
    ("[network]\nproxy = 5\n", "network.proxy"),
    ("[ui]\nlanguage = 'fr'\n", "'en', 'zh'"),
    ("chat = 5\n", "[chat] must be a table"),
    ("[bogus]\na = 1\n", "no section or key 'bogus'"),
    ("[chat]\nbogus = 1\n", "allowed keys"),
    ("format_version = 2\n", "format_version"),
    ("[chat\nmodel = ", "not valid TOML"),
    ("[chat]\nmodel = 'unterminated\n", "not valid TOML"),
    ("\ufeff[chat]\nmodel = 'x'\n", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "says"), CONFIG_CASES)
def test_every_bad_setting_is_refused_naming_the_key(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path, environ={})
    assert says in str(refused.value)


def test_config_that_is_not_utf8_text_says_how_to_save_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"[chat]\nmodel = '\xff\xfe caf\xe9'\n")
    with pytest.raises(ConfigError, match="not UTF-8 text; save it as UTF-8"):
        load_config(path, environ={})


TOML_VALUES = st.recursive(
    st.none().map(lambda _: "")
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
KEYS = st.sampled_from(
    [
        "base_url",
        "model",
        "timeout_s",
        "dimensions",
        "batch_size",
        "max_tool_calls",
        "top_k",
        "mode",
        "retention_days",
        "keep_last",
        "keep_days",
        "proxy",
        "language",
        "price",
        "bogus",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*SECTIONS, "ui", "format_version", "other"]),
        st.dictionaries(KEYS, TOML_VALUES, max_size=3) | TOML_VALUES,
        max_size=3,
    )
)
def test_any_settings_document_is_accepted_or_refused_in_words(data: dict[str, Any]) -> None:
    try:
        config = parse_config(data, environ={})
    except ConfigError as exc:
        message = str(exc)
        assert message and "Traceback" not in message and len(message) < 2000
        return
    assert isinstance(config, Config)
    floats = [
        config.chat.timeout_s,
        config.chat.temperature,
        config.embedding.timeout_s,
        config.chat.price.output,
        config.chat.daily_cap,
    ]
    assert all(math.isfinite(v) for v in floats)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_in_config_toml_are_accepted_or_refused_in_words(raw: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_bytes(raw)
        try:
            load_config(path, environ={})
        except ConfigError as exc:
            assert str(exc)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([*SECTIONS, "ui"]),
    KEYS,
    st.text(max_size=40).filter(lambda s: "\x00" not in s),
)
def test_any_environment_override_is_accepted_or_refused_in_words(
    section: str, key: str, value: str
) -> None:
    name = f"CITEWISE_{section.upper()}_{key.upper()}"
    try:
        parse_config({}, environ={name: value})
    except ConfigError as exc:
        assert name in str(exc) or f"{section}.{key}" in str(exc), str(exc)


def test_the_largest_allowed_values_still_work_end_to_end(tmp_path: Path) -> None:
    """Bounds are where the program still works, not just where validation stops."""
    home = tmp_path / "home"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nsome text\n", encoding="utf-8")
    big = {
        "CITEWISE_SNAPSHOTS_KEEP_DAYS": "36500",
        "CITEWISE_SNAPSHOTS_KEEP_LAST": "100000",
        "CITEWISE_TRACE_RETENTION_DAYS": "36500",
        "CITEWISE_TRACE_MAX_MEGABYTES": "1000000",
        "CITEWISE_CHAT_TIMEOUT_S": "86400",
        "CITEWISE_INGEST_MAX_FILE_MEGABYTES": "1000000",
        "CITEWISE_RETRIEVAL_EXACT_SEARCH_MAX_BLOCKS": "1000000000",
    }
    imported = _cli(home, "import", str(docs), **big)
    assert imported.returncode == 0, imported.stderr
    gc = _cli(home, "snapshots", "gc", "--json", **big)
    assert gc.returncode == 0, gc.stderr
    found = _cli(home, "tool", "search_blocks", '{"query": "text"}', **big)
    assert found.returncode == 0 and json.loads(found.stdout)["total"] == 1


@pytest.mark.parametrize(
    ("files", "env"),
    [
        ({"config.toml": b"[chat]\nmodel = '\xff'\n"}, {}),
        ({"config.toml": b"[chat\nmodel"}, {}),
        ({"config.toml": b"[ui]\nlanguage = 3\n"}, {}),
        ({}, {"CITEWISE_BUDGET_MAX_TOOL_CALLS": "lots"}),
        ({}, {"CITEWISE_CHAT_TIMEOUT_S": "inf"}),
        ({}, {"CITEWISE_CHAT_NOPE": "1"}),
        ({}, {"CITEWISE_TRACE_MODE": "verbose"}),
    ],
)
def test_the_cli_reports_bad_settings_with_exit_2_and_no_traceback(
    tmp_path: Path, files: dict[str, bytes], env: dict[str, str]
) -> None:
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    # Each case through another command (all of them read the settings first).
    commands = (["status"], ["import", str(tmp_path / "nothing")], ["ask", "hello?"])
    for command in commands[len(str(files) + str(env)) % 3 :][:1]:
        proc = _cli(tmp_path, *command, **env)
        assert proc.returncode == 2, (command, proc.stderr)
        _clear_error(proc.stderr)
        assert "config" in proc.stderr or "CITEWISE_" in proc.stderr


# -- `citewise tool` arguments -----------------------------------------------------------------
@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-input-library")
    docs = root / "docs"
    docs.mkdir()
    (docs / "rivers.md").write_text(
        "# Rivers\n\n## Amazon\n\nThe Amazon carries the most water.\n", encoding="utf-8"
    )
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def _tool(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str, str]:
    monkeypatch.setenv("CITEWISE_HOME", str(home))
    code = citewise(["tool", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


TOOL_CASES: list[tuple[str, str, str]] = [
    ("search_blocks", "not json", "not valid JSON"),
    ("search_blocks", "", "not valid JSON"),
    ("search_blocks", "[1, 2]", "the arguments must be a JSON object"),
    ("search_blocks", '"query"', "the arguments must be a JSON object"),
    ("search_blocks", "null", "the arguments must be a JSON object"),
    ("search_blocks", "12", "the arguments must be a JSON object"),
    ("list_documents", "-1e+16", "the arguments must be a JSON object"),  # not an option
    ("search_blocks", "{}", "query"),
    ("search_blocks", '{"query": 5}', "query"),
    ("search_blocks", '{"query": null}', "query"),
    ("search_blocks", '{"query": "x", "bogus": 1}', "no field 'bogus'"),
    ("search_blocks", '{"query": "x", "doc_ids": "d1"}', "doc_ids"),
    ("search_blocks", '{"query": "x", "doc_ids": [1]}', "doc_ids"),
    ("search_blocks", '{"query": "\\ud800"}', "JSON"),
    ("search_blocks", '{"query": "x"', "not valid JSON"),
    ("search_blocks", "{'query': 'x'}", "not valid JSON"),
    ("search_blocks", "[" * 100_000 + "]" * 100_000, "JSON"),
    ("search_blocks", '{"query": ' + "[" * 5000 + "]" * 5000 + "}", "query"),
    ("list_blocks", '{"doc_id": "../../etc/passwd"}', "doc_id"),
    ("list_blocks", '{"doc_id": "x", "start": -5}', ""),
    ("list_blocks", '{"doc_id": "x", "limit": 99999999999999999999999}', ""),
    ("get_outline", '{"doc_ids": ["\\u0000"]}', ""),
    ("scan_term", '{"term": ""}', "term"),
    ("scan_term", '{"term": 1e400}', ""),
]


@pytest.mark.parametrize(("name", "args", "says"), TOOL_CASES)
def test_tool_arguments_that_are_wrong_get_a_tool_error_json_and_exit_2(
    library: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    args: str,
    says: str,
) -> None:
    code, out, err = _tool(library, monkeypatch, capsys, name, args)
    assert NO_TRACE not in err and "unexpected error" not in err, err
    document = json.loads(out)  # exactly one JSON document
    if code == 0:  # a legal empty is allowed (e.g. an id that matches nothing is not legal)
        assert "error" not in document
        return
    assert code == 2, (code, out, err)
    assert document["error"]["code"] in {"invalid_argument", "scope_not_found"}
    assert says in document["error"]["message"], document["error"]["message"]


def test_unknown_tools_are_usage_errors_that_list_the_five(
    library: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("nope", "", "Search_Blocks", "../search_blocks", "search_blocks\x00"):
        code, out, err = _tool(library, monkeypatch, capsys, name, "{}")
        assert code == 2 and out == ""
        assert "list_documents, get_outline, search_blocks, list_blocks, scan_term" in " ".join(
            err.split()
        )
        assert NO_TRACE not in err


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["query", "doc_ids", "doc_id", "term", "start", "limit", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(["list_documents", "get_outline", "search_blocks", "list_blocks", "scan_term"]),
    JSON_VALUES,
)
def test_any_json_arguments_give_a_result_or_a_tool_error(
    library: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    value: Any,
) -> None:
    code, out, err = _tool(library, monkeypatch, capsys, name, json.dumps(value))
    assert code in (0, 2), (code, err)
    document = json.loads(out)
    assert ("error" in document) == (code == 2), document
    assert NO_TRACE not in err


def test_tool_arguments_of_100_kilobytes_are_answered(
    library: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1 MB works too but takes ~35 s on this machine (the query has no length limit).
    big = json.dumps({"query": "amazon " * 15_000})
    code, out, err = _tool(library, monkeypatch, capsys, "search_blocks", big)
    assert code in (0, 2), err
    json.loads(out)


# -- questions ---------------------------------------------------------------------------------
def _chat_env(server: ChatServer) -> dict[str, str]:
    return {"CITEWISE_CHAT_BASE_URL": server.url, "CITEWISE_DEEPSEEK_API_KEY": "test-key"}


def test_empty_and_blank_questions_are_usage_errors(library: Path, chat_server: ChatServer) -> None:
    for question in ("", "   ", "\t\n", "\u3000"):
        proc = _cli(library, "ask", question, **_chat_env(chat_server))
        assert proc.returncode == 2, (question, proc.stderr)
        _clear_error(proc.stderr)
        assert "question" in proc.stderr
    assert chat_server.requests == []


def test_a_question_of_undecodable_bytes_says_to_fix_the_terminal(
    library: Path, chat_server: ChatServer
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "ask", b"caf\xe9 \xff?"],
        cwd=REPO,
        env=_env(library, **_chat_env(chat_server)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    _clear_error(proc.stderr)
    assert "UTF-8" in proc.stderr
    assert chat_server.requests == []


def test_a_megabyte_question_is_refused_by_the_budget_before_any_model_call(
    library: Path, chat_server: ChatServer
) -> None:
    # argv holds at most 128 KiB per argument; the question's words are joined back together.
    proc = _cli(library, "ask", *(["x" * 100_000] * 10), **_chat_env(chat_server))
    assert proc.returncode == 1, proc.stderr
    assert "no answer (budget)" in proc.stderr and "shorter question" in proc.stderr
    assert NO_TRACE not in proc.stderr
    assert chat_server.requests == []


def test_odd_but_valid_characters_in_a_question_are_asked(
    library: Path, chat_server: ChatServer
) -> None:
    for question in ("a\x01b\x7f?", "\u202eRTL\u200f e\u0301 \U0001f600 [/] [bold]x?", "-x"):
        chat_server.script(Text("Thought: t\nAction: Finish[Fine.]"))
        proc = _cli(library, "ask", "--", question, **_chat_env(chat_server))
        assert proc.returncode == 0, (question, proc.stderr)
        assert proc.stdout.startswith("Fine.")
        assert question in chat_server.requests[-1].body["messages"][-1]["content"]
    # Questions are listed as text, never read as markup ("[/]" used to crash the list).
    listed = _cli(library, "trace", "list", COLUMNS="250")
    assert listed.returncode == 0, listed.stderr
    assert "[/] [bold]x?" in listed.stdout


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _ask_on_page(
    user: User, home: Path, server: ChatServer, question: str
) -> Callable[[str], list[str]]:
    register(service_for(home, chat={"base_url": server.url}))
    await user.open("/")
    user.find(marker="question-box").type(question)
    user.find(marker="ask-button").click()

    def texts(marker: str) -> list[str]:
        try:
            return [str(getattr(e, "text", "")) for e in user.find(marker=marker).elements]
        except AssertionError:
            return []

    return texts


@pytest.mark.anyio
async def test_the_ask_page_refuses_undecodable_text_in_words(
    ui_user: User,  # noqa: F811
    home_copy: Path,  # noqa: F811
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    no_keys: None,  # noqa: F811
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    texts = await _ask_on_page(ui_user, home_copy, chat_server, "broken \ud800 paste?")
    await ui_user.should_see(marker="ask-error", retries=50)
    assert "not text" in texts("ask-error")[0]  # "…characters that are not text…"
    assert chat_server.requests == []


@pytest.mark.anyio
async def test_the_ask_page_answers_a_question_with_nul_and_control_characters(
    ui_user: User,  # noqa: F811
    home_copy: Path,  # noqa: F811
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    no_keys: None,  # noqa: F811
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    chat_server.script(Text("Thought: t\nAction: Finish[Still fine.]"))
    await _ask_on_page(ui_user, home_copy, chat_server, "nul \x00 and \x1b[31m escape?")
    await ui_user.should_see("Still fine.", retries=100)


@pytest.mark.anyio
async def test_the_ask_page_discloses_the_budget_for_a_megabyte_question(
    ui_user: User,  # noqa: F811
    home_copy: Path,  # noqa: F811
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    no_keys: None,  # noqa: F811
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    texts = await _ask_on_page(ui_user, home_copy, chat_server, "why? " * 200_000)
    await ui_user.should_see(marker="no-answer", retries=200)
    assert "shorter question" in " ".join(texts("no-answer"))
    assert chat_server.requests == []


# -- file names --------------------------------------------------------------------------------
ODD_NAMES: list[bytes] = [
    "\u200fRTL\u202eevil.md".encode(),
    "caf\u00e9.md".encode(),  # NFC
    "cafe\u0301.md".encode(),  # its NFD twin: a different file, and a different document
    "\U0001f600 emoji \U0001f468\u200d\U0001f469\u200d\U0001f467.md".encode(),
    ("long-" + "名" * 80 + ".md").encode(),  # 245 bytes: near the 255-byte limit
    b"-rf.md",
    b"--help.md",
    b"new\nline.md",
    b"tab\tand space .md",
    b"[red]markup[-].md",
    "zero\u200bwidth.md".encode(),
    "中文 文件.md".encode(),
]
NOT_UTF8 = b"latin1-caf\xe9.md"


@pytest.fixture
def odd_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "odd"
    folder.mkdir()
    for i, name in enumerate([*ODD_NAMES, NOT_UTF8]):
        with open(os.path.join(os.fsencode(folder), name), "wb") as f:
            f.write(f"# Document {i}\n\nBody {i} about rivers.\n".encode())
    return folder


def test_every_odd_file_name_is_imported_and_an_undecodable_one_fails_alone(
    tmp_path: Path, odd_folder: Path
) -> None:
    home = tmp_path / "home"
    proc = _cli(home, "import", "--json", str(odd_folder))
    assert proc.returncode == 3, proc.stderr  # ready_partial: one document could not come in
    assert NO_TRACE not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "ready_partial"
    (failed,) = result["failed_documents"]
    assert failed["reason"] == "bad_name" and "rename" in failed["message"]
    assert failed["source"] == "latin1-caf\\xe9.md"
    listed = _cli(home, "tool", "list_documents", "{}")
    sources = {d["source_label"] for d in json.loads(listed.stdout)["documents"]}
    assert sources == {name.decode() for name in ODD_NAMES}  # NFC and NFD twins both kept
    status = _cli(home, "status")
    assert status.returncode == 0 and "latin1-caf\\xe9.md" in status.stdout
    assert NO_TRACE not in status.stderr


def test_odd_file_names_given_one_by_one(tmp_path: Path, odd_folder: Path) -> None:
    home = tmp_path / "home"
    dash = _cli(home, "import", str(odd_folder / "-rf.md"))
    assert dash.returncode == 0, dash.stderr  # a full path never looks like an option
    bare = subprocess.run(
        [sys.executable, "-m", "cli", "import", "--help.md"],
        cwd=odd_folder,
        env=_env(home, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bare.returncode == 2 and NO_TRACE not in bare.stderr  # argparse: unknown option
    after_dashes = subprocess.run(
        [sys.executable, "-m", "cli", "import", "--", "--help.md"],
        cwd=odd_folder,
        env=_env(home, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert after_dashes.returncode == 0, after_dashes.stderr
    undecodable = subprocess.run(
        [sys.executable, "-m", "cli", "import", os.fsencode(odd_folder) + b"/" + NOT_UTF8],
        cwd=REPO,
        env=_env(home),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=60,
    )
    assert undecodable.returncode == 2
    _clear_error(undecodable.stderr)
    assert "UTF-8" in undecodable.stderr and "rename" in undecodable.stderr
    # Nothing already imported was lost along the way.
    listed = json.loads(_cli(home, "tool", "list_documents", "{}").stdout)
    assert {d["source_label"] for d in listed["documents"]} == {"-rf.md", "--help.md"}


# -- collection names --------------------------------------------------------------------------
BAD_COLLECTIONS = [
    "",
    " ",
    ".",
    "..",
    "../escape",
    "a/b",
    "a\\b",
    "/abs",
    " lead",
    "trail ",
    "dot.",
    "x" * 65,
    "new\nline",
    "tab\there",
    "nul\x00",
    "\u202eevil",
    "e\u0301",
    "\U0001f600",
    "[/]",
    "con",
    "NUL.txt",
    "Com1",
    "lpt9",
]
GOOD_COLLECTIONS = ["notes", "Notes 2", "笔记", "caf\u00e9", "a.b-c_d", "x" * 64]


@pytest.mark.parametrize("name", BAD_COLLECTIONS)
def test_bad_collection_names_are_refused_in_words(name: str) -> None:
    with pytest.raises(InvalidCollectionName) as refused:
        check_collection_name(name)
    assert "collection name" in str(refused.value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
@example("0\n")  # a regex's `$` matches before a final newline
def test_any_collection_name_is_a_safe_folder_name_or_refused(name: str) -> None:
    try:
        checked = check_collection_name(name)
    except InvalidCollectionName:
        return
    assert checked == name and 0 < len(name) <= 64
    assert not ({"/", "\\", "\x00", "\n", ":"} & set(name)) and name not in {".", ".."}
    assert name == name.strip(" .")


def test_collection_commands_refuse_bad_names_and_keep_the_good_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("CITEWISE_HOME", str(home))
    for name in GOOD_COLLECTIONS:
        assert citewise(["collections", "create", name]) == 0, capsys.readouterr().err
    for name in ["../escape", "[/]", "con", "\u202eevil", "x" * 65, "a/b", "nul\x00"]:
        for command in (
            ["collections", "create", name],
            ["collections", "use", name],
            ["collections", "rename", "notes", name],
            ["collections", "delete", name, "--yes"],
            ["status", "--collection", name],
            ["import", "--collection", name, str(tmp_path)],
        ):
            code = citewise(command)
            assert code == 2, command
            _clear_error(capsys.readouterr().err)
    capsys.readouterr()
    assert citewise(["collections", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert set(GOOD_COLLECTIONS) <= set(listed["collections"])
    assert not (tmp_path / "escape").exists() and not (home / "escape").exists()
    undecodable = subprocess.run(
        [sys.executable, "-m", "cli", "collections", "create", b"caf\xe9"],
        cwd=REPO,
        env=_env(home),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=60,
    )
    assert undecodable.returncode == 2
    _clear_error(undecodable.stderr)


# -- the settings page -------------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("marker", "value", "says"),
    [
        ("setting-budget.max_tool_calls", None, "budget.max_tool_calls"),
        ("setting-budget.max_tool_calls", -1, "budget.max_tool_calls"),
        ("setting-budget.max_tool_calls", 2.5, "budget.max_tool_calls"),
        # A browser cannot send NaN or Infinity (JSON has neither): an empty box is None.
        ("setting-chat.timeout_s", None, "chat.timeout_s"),
        ("setting-chat.timeout_s", 1e30, "chat.timeout_s"),
        ("setting-chat.max_output_tokens", 10**30, "chat.max_output_tokens"),
        ("setting-chat.daily_cap", -1e308, "chat.daily_cap"),
        ("setting-chat.daily_cap", 1e308, "chat.daily_cap"),
        ("setting-chat.base_url", "javascript:alert(1)", "chat.base_url"),
        ("setting-chat.base_url", "", "chat.base_url"),
        ("setting-chat.model", "", "chat.model"),
    ],
)
async def test_the_settings_page_refuses_bad_values_and_keeps_the_file(
    ui_user: User,  # noqa: F811
    tmp_path: Path,
    no_keys: None,  # noqa: F811
    marker: str,
    value: Any,
    says: str,
) -> None:
    service = service_for(tmp_path / "home")
    before = service.data.config_file.read_bytes()
    register(service)
    await ui_user.open("/settings")
    (element,) = ui_user.find(marker=marker).elements
    element.set_value(value)
    ui_user.find(marker="settings-save").click()
    await ui_user.should_see(marker="error-message", retries=50)
    sentences = [str(e.text) for e in ui_user.find(marker="error-message").elements]
    details = [str(e.text) for e in ui_user.find(marker="error-details-text").elements]
    # The sentence is for a person; the setting's name waits under details for the curious.
    assert sentences and all(says not in x and "Traceback" not in x for x in sentences)
    assert any(says in d for d in details), details
    assert service.data.config_file.read_bytes() == before
