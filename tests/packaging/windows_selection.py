"""Which tests the Windows workflow (.github/workflows/windows.yml) runs: a pytest plugin,
loaded there with `-p tests.packaging.windows_selection`, that skips with a stated reason

- on Windows, the tests that need Linux itself (Xvfb and Qt, Debian's chromium, SIGKILL,
  symlinks) — each listed here, by file or by test, with why;
- anywhere, the tests that read the shared corpus (../shared/corpus) when it is not there: it
  lives beside the repository on the development machines, not in it, so a CI checkout has
  none.

Everything else runs. `./test` on Linux does not load this plugin.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.corpus import CORPUS, REPO

NO_SIGNALS = (
    "kills a process with SIGKILL and checks for that signal; Windows has no signals (a "
    "killed process there just ends, TerminateProcess)"
)
CHROMIUM = "drives Debian's /usr/bin/chromium, which ./test installs with apt"
# node id, or a file for all its tests → why it cannot run on Windows
LINUX_ONLY: dict[str, str] = {
    "tests/web/test_native_window.py": (
        "Qt WebEngine under Xvfb (X11); the Windows window is WebView2, whose selection and "
        "missing-runtime path tests/web/test_window.py checks"
    ),
    "tests/web/test_browser_journey.py": CHROMIUM,
    "tests/web/test_source_viewer_browser.py": CHROMIUM,
    "tests/hardening/test_crash_points.py": (
        "its crash points end the process with SIGKILL (tests/hardening/crash_session.py) and "
        "check for that signal; Windows has no signals"
    ),
    "tests/actors/test_crash_resume.py::"
    "test_killed_imports_leave_a_verifiable_snapshot_and_resume_without_rework": NO_SIGNALS,
    "tests/actors/test_ingest_resume.py::"
    "test_a_kill_mid_document_resumes_without_embedding_a_finished_batch_again": NO_SIGNALS,
    "tests/engine/trace/test_store.py::"
    "test_a_store_killed_mid_write_opens_whole_and_keeps_working": NO_SIGNALS,
    "tests/hardening/test_secrets_canary.py::"
    "test_no_key_is_written_or_printed_anywhere_after_a_full_session": NO_SIGNALS,
    "tests/hardening/test_loopback_attacks.py::"
    "test_a_token_or_cookie_from_an_earlier_launch_opens_nothing": (
        "its data directory has symlinks (one to /etc/passwd); making a symlink on Windows "
        "needs Developer Mode or administrator rights"
    ),
    "tests/hardening/test_loopback_attacks.py::"
    "test_path_traversal_in_every_route_that_names_a_file": (
        "its data directory has symlinks (one to /etc/passwd); making a symlink on Windows "
        "needs Developer Mode or administrator rights"
    ),
}
CORPUS_FIXTURES = frozenset({"corpus_home", "warm_home"})
CORPUS_NAMES = re.compile(r"\b(DOCS|GOLD|CORPUS)\b|\btests\.scans\b|\bfrom tests import scans\b")
NO_CORPUS = f"reads the shared corpus, which is not at {CORPUS} (it is not in the repository)"


def linux_only_reason(nodeid: str) -> str | None:
    """Why this test cannot run on Windows, or None when it can."""
    path, _, name = nodeid.partition("::")
    test = name.split("[", 1)[0]
    return LINUX_ONLY.get(f"{path}::{test}") or LINUX_ONLY.get(path)


def corpus_names(source: str) -> frozenset[str]:
    """The module-level names (functions, fixtures, constants) of a test module that read the
    corpus: those that name it, and those that use one of them, to any depth."""
    bodies: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bodies[node.name] = ast.unparse(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bodies[target.id] = ast.unparse(node)
    tainted = {name for name, body in bodies.items() if CORPUS_NAMES.search(body)}
    while True:
        more = {
            name
            for name, body in bodies.items()
            if name not in tainted and any(re.search(rf"\b{t}\b", body) for t in tainted)
        }
        if not more:
            return frozenset(tainted)
        tainted |= more


def _reads_corpus(item: pytest.Item, modules: dict[Path, frozenset[str]]) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    if CORPUS_FIXTURES & fixtures:
        return True
    if item.path not in modules:
        modules[item.path] = corpus_names(item.path.read_text(encoding="utf-8"))
    names = modules[item.path]
    test = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    return test in names or bool(names & fixtures)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    corpus_missing = not CORPUS.is_dir()
    modules: dict[Path, frozenset[str]] = {}
    for item in items:
        nodeid = item.path.relative_to(REPO).as_posix()
        nodeid += item.nodeid[item.nodeid.index("::") :] if "::" in item.nodeid else ""
        why = linux_only_reason(nodeid) if sys.platform == "win32" else None
        if why is None and corpus_missing and _reads_corpus(item, modules):
            why = NO_CORPUS
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=why))
