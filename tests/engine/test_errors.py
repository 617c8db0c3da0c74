"""The error modules: what a UserError tells the front ends, one HTTP-status reading for both
providers, and exception classes defined once, in an errors module, under a name of their own."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest

import actors.errors
import engine.errors
from actors.errors import CatalogError, SnapshotDamaged, SpendingCapReached, UpgradeRequired
from engine.errors import (
    EXIT_FAILURE,
    EXIT_USAGE,
    ChatError,
    ConfigError,
    EmbeddingError,
    InvalidCollectionName,
    ProviderError,
    UpgradeError,
    UserError,
    WriterBusy,
    provider_code_for_status,
)

ROOT = Path(__file__).resolve().parents[2]
# Exception classes that may live outside an errors module, and why.
OUTSIDE_ERRORS_MODULES = {
    ("engine/tools/contracts.py", "UnknownTool"),  # the tools package is being refactored
}


def _user_errors() -> list[type[UserError]]:
    found: list[type[UserError]] = []
    for module in (engine.errors, actors.errors):
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, UserError) and value is not UserError
        ]
    return found


def test_every_user_error_says_its_exit_code_and_its_own_message_key() -> None:
    errors = _user_errors()
    assert len(errors) > 25
    for cls in errors:
        assert cls.exit_code in (1, 2, 3), cls
        assert re.fullmatch(r"(error|spend)\.[a-z_]+", cls.message_key), cls
    keys = [cls.message_key for cls in errors]
    assert len(set(keys)) == len(keys), "two errors would show the same translated text"


def test_exit_codes_are_the_ones_the_cli_gives_these_errors_today() -> None:
    usage = (ConfigError, InvalidCollectionName, WriterBusy, UpgradeError, CatalogError)
    for cls in (*usage, SnapshotDamaged, UpgradeRequired):
        assert cls.exit_code == EXIT_USAGE, cls
    assert SpendingCapReached.exit_code == EXIT_FAILURE  # a refused request is a failure


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "unauthorized"),
        (403, "unauthorized"),
        (402, "no_balance"),
        (404, "bad_request"),
        (400, "bad_request"),
        (429, "rate_limited"),
        (408, "server_error"),  # the vendor or a proxy gave up waiting: try again
        (500, "server_error"),
        (503, "server_error"),
    ],
)
def test_one_reading_of_an_http_status_for_chat_and_embedding(status: int, code: str) -> None:
    assert provider_code_for_status(status) == code
    # Both providers agree on whether one more attempt may help.
    chat = ChatError(code, "m", status=status)  # type: ignore[arg-type]
    embedding = EmbeddingError(code, "m", status=status)  # type: ignore[arg-type]
    assert chat.retryable == embedding.retryable == (code in ("rate_limited", "server_error"))


def test_a_provider_error_survives_pickling_with_its_status_and_vendor_words() -> None:
    for error in (
        ChatError("rate_limited", "slow down", retry_after=2.0, status=429, vendor_message="v"),
        EmbeddingError("quota", "no quota", retryable=False, status=429, vendor_message="v"),
    ):
        back = pickle.loads(pickle.dumps(error))
        assert isinstance(back, ProviderError) and type(back) is type(error)
        assert (back.code, back.message, back.retryable, back.retry_after, back.status) == (
            error.code,
            error.message,
            error.retryable,
            error.retry_after,
            error.status,
        )
        assert back.vendor_message == "v" and str(back) == str(error)


def test_a_damaged_snapshot_survives_pickling_with_its_message() -> None:
    error = SnapshotDamaged("default", "s1", "manifest.json is corrupt", True)
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) and back.active


def _exception_classes() -> list[tuple[str, str]]:
    """(file, class name) of every exception class defined in engine/, actors/ and index/."""
    classes: dict[tuple[str, str], list[str]] = {}
    for package in ("engine", "actors", "index"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [
                        b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases
                    ]
                    classes[(path.relative_to(ROOT).as_posix(), node.name)] = bases
    exceptions = {"Exception", "ValueError", "LookupError", "OSError", "RuntimeError"}
    grown = True
    while grown:  # a class is an exception when one of its bases is
        grown = False
        for (_, name), bases in classes.items():
            if name not in exceptions and any(b in exceptions for b in bases):
                exceptions.add(name)
                grown = True
    return [key for key, bases in classes.items() if key[1] in exceptions]


def test_exception_classes_live_in_errors_modules_under_names_of_their_own() -> None:
    found = _exception_classes()
    names = [name for _, name in found]
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    outside = {
        (path, name) for path, name in found if not path.endswith("/errors.py")
    } - OUTSIDE_ERRORS_MODULES
    assert not outside, f"define these in the package's errors.py: {sorted(outside)}"
