"""Every UI text exists in English and Chinese with the same placeholders."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from web.i18n import TEXTS, Texts

WEB = Path(__file__).resolve().parents[2] / "web"


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_both_languages_have_the_text_with_the_same_placeholders(key: str) -> None:
    en, zh = TEXTS[key]
    assert en.strip() and zh.strip()
    assert _fields(en) == _fields(zh)


def test_every_key_the_pages_use_exists() -> None:
    used: set[str] = set()
    for source in WEB.glob("*.py"):
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_]+\.[\w.]+)["']""", source.read_text()))
    missing = sorted(k for k in used if not k.endswith(".") and k not in TEXTS)
    assert used and missing == []


@pytest.mark.parametrize(
    ("prefix", "values"),
    [
        ("lib.doc_state.", ("queued", "parsing", "embedding", "done", "reused", "failed")),
        ("lib.state.", ("running", "paused", "building", "done", "cancelled", "failed")),
        ("set.provider.", ("local", "openai_compatible")),
        ("set.trace_mode.", ("metadata", "full")),
    ],
)
def test_texts_chosen_by_a_state_exist_for_every_state(
    prefix: str, values: tuple[str, ...]
) -> None:
    assert [v for v in values if prefix + v not in TEXTS] == []


def test_language_switches_the_text() -> None:
    assert Texts("en")("nav.library") == "Library"
    assert Texts("zh")("nav.library") == "资料库"
    assert Texts("zh")("ask.turns", n=3) == "3 个问题"
    with pytest.raises(KeyError):
        Texts("en")("no.such.key")
