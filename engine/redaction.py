"""The one place secrets are scrubbed from text: error messages, log records and tracebacks.

Every key the process reads (engine.secrets calls `remember`) is replaced, in its raw,
URL-encoded and base64 forms, together with anything shaped like a vendor key or a bearer token.
`install()` puts that on every log record of every logger, on every handler present (as a
logging.Filter) and on uncaught-exception hooks; it never prints or stores a key itself.
"""

from __future__ import annotations

import base64
import logging
import re
import sys
import threading
import traceback
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote

MASK = "[redacted]"
MIN_SECRET_CHARS = 4  # shorter values would blank out ordinary words
MIN_REMEMBERED_CHARS = 8  # remembered keys apply to all text; real keys are far longer
SECRETISH = re.compile(r"(?i)\b(?:sk|pk|ak)-[A-Za-z0-9*._-]{4,}|bearer\s+\S+")

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_installed = False


def encoded_forms(secret: str) -> set[str]:
    """The ways a secret shows up in text: as is, URL-encoded, and base64 at each alignment."""
    forms = {secret, quote(secret, safe=""), quote(secret)}
    raw = secret.encode("utf-8")
    for shift in range(3):
        # base64 of "<shift bytes>secret…": the characters that depend on the secret alone.
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = (8 * shift + 5) // 6  # first character made of the secret's bits only
        end = 8 * (shift + len(raw)) // 6  # past the last such character
        if end - start >= MIN_SECRET_CHARS * 2:
            forms.add(encoded[start:end])
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def remember(secret: str | None) -> None:
    """Scrub `secret` from everything redacted from now on in this process."""
    global _secrets
    if not secret or len(secret) < MIN_REMEMBERED_CHARS:
        return
    with _lock:
        if secret not in _secrets:
            _secrets = _secrets | {secret}
            _patterns.cache = None


def known() -> frozenset[str]:
    """The secrets remembered so far (for byte-level scrubbing of files and bundles)."""
    return _secrets


class _Patterns:
    cache: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str] | None:
        cached = self.cache
        if cached is None and _secrets:
            forms = set().union(*(encoded_forms(s) for s in _secrets))
            # Longest first, so a secret is never half-replaced by a shorter form of another.
            alternatives = sorted(forms, key=len, reverse=True)
            cached = self.cache = re.compile("|".join(map(re.escape, alternatives)))
        return cached


_patterns = _Patterns()


def redact(text: str, *extra: str | None) -> str:
    """`text` without any remembered secret, the `extra` ones, or anything key-shaped."""
    for secret in extra:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            for form in sorted(encoded_forms(secret), key=len, reverse=True):
                text = text.replace(form, MASK)
    pattern = _patterns.get()
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return SECRETISH.sub(MASK, text)


def redact_exception(exc: BaseException) -> str:
    """A formatted traceback of `exc`, redacted."""
    return redact("".join(traceback.format_exception(exc)))


# -- logging ----------------------------------------------------------------------------------
class _Scrubbed:
    """Stands in for a %-argument that held a secret: formats as the original would, redacted."""

    def __init__(self, value: object) -> None:
        self._str = redact(str(value))
        self._repr = redact(repr(value))

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return self._repr


def _clean_arg(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value)
    text = str(value)
    return (
        value if redact(text) == text and redact(repr(value)) == repr(value) else _Scrubbed(value)
    )


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Redact a record in place: message, arguments, exception and stack text."""
    if isinstance(record.msg, str):
        record.msg = redact(record.msg)
    elif record.msg is not None:
        record.msg = _clean_arg(record.msg)
    args = record.args
    if isinstance(args, Mapping):
        record.args = {k: _clean_arg(v) for k, v in args.items()}
    elif isinstance(args, tuple):
        record.args = tuple(_clean_arg(a) for a in args)
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        # Formatters reuse exc_text when it is set, so the raw traceback is never rendered.
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    elif record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


class RedactingFilter(logging.Filter):
    """On a handler: every record it emits is scrubbed first (it never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub_record(record)
        return True


def _all_handlers() -> Iterable[logging.Handler]:
    loggers: list[logging.Logger] = [logging.getLogger()]
    for item in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(item, logging.Logger):
            loggers.append(item)
    for logger in loggers:
        yield from list(logger.handlers)


def guard_handlers() -> int:
    """Add the filter to every handler that does not have it yet; how many were added."""
    added = 0
    for handler in _all_handlers():
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
            added += 1
    return added


def install() -> None:
    """Redact every log record from now on (any logger, any handler, even ones added later),
    and uncaught exceptions printed by Python. Safe to call again (e.g. after a library
    configured its own logging): it then only guards the new handlers."""
    global _installed
    with _lock:
        first = not _installed
        _installed = True
    if first:
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return scrub_record(previous(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        sys.excepthook = _excepthook
        threading.excepthook = _thread_excepthook
    guard_handlers()


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    text = "".join(traceback.format_exception(kind, exc, tb))
    sys.stderr.write(redact(text))


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    text = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
    sys.stderr.write(f"Exception in thread {name}:\n{redact(text)}")
