"""Every UI text exists in English and Chinese with the same placeholders."""

from __future__ import annotations

import datetime as dt
import re
import string
from pathlib import Path

import pytest

from web.i18n import TEXTS, Texts, when

WEB = Path(__file__).resolve().parents[2] / "web"


def _fields(text: str) -> set[str]:
    """Placeholder names; a plural form `{n|one|other}` counts as the placeholder n."""
    return {name.split("|")[0] for _, name, _, _ in string.Formatter().parse(text) if name}


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


@pytest.mark.parametrize(
    ("key", "values", "en", "zh"),
    [
        ("ask.turns", {"n": 1}, "1 question", "1 个问题"),
        ("ask.turns", {"n": 2}, "2 questions", "2 个问题"),
        ("ask.turns", {"n": 0}, "0 questions", "0 个问题"),
        ("lib.tool.hits", {"count": 1}, "1 occurrence", "共出现 1 次"),
        ("tr.partial", {"dropped": 1}, "1 record was lost", "1 条记录"),
        ("tr.partial", {"dropped": 3}, "3 records were lost", "3 条记录"),
    ],
)
def test_counts_take_the_right_form_in_each_language(
    key: str, values: dict[str, object], en: str, zh: str
) -> None:
    assert en in Texts("en")(key, **values)
    assert zh in Texts("zh")(key, **values)


def test_a_count_written_as_text_still_picks_its_form() -> None:
    line = Texts("en")("ask.summary", turns="1", tools=2, tokens="1,001", cost="0", currency="X")
    assert line.startswith("1 turn · 2 tool calls · 1,001 chat tokens")


def test_no_english_text_hedges_a_plural() -> None:
    hedged = [key for key, (en, _) in TEXTS.items() if re.search(r"\w\(s\)", en)]
    assert hedged == []


def test_times_read_as_a_local_day_and_hour_in_each_language() -> None:
    plus8 = dt.timezone(dt.timedelta(hours=8))
    now = dt.datetime(2026, 12, 2, 20, 0, tzinfo=plus8)
    assert when(Texts("en"), "2026-12-02T02:14:00Z", now) == "2 Dec 10:14"
    assert when(Texts("zh"), "2026-12-02T02:14:00Z", now) == "12月2日 10:14"
    assert when(Texts("en"), "2025-01-31T23:30:00Z", now) == "1 Feb 2025 07:30"
    assert when(Texts("zh"), "2025-01-31T23:30:00Z", now) == "2025年2月1日 07:30"
    assert when(Texts("en"), "not a time", now) == "not a time"


def test_times_of_one_minute_can_be_told_apart_by_their_seconds() -> None:
    now = dt.datetime(2026, 12, 2, 20, 0, tzinfo=dt.UTC)
    assert when(Texts("en"), "2026-12-02T10:14:05Z", now, seconds=True) == "2 Dec 10:14:05"
    assert when(Texts("zh"), "2026-12-02T10:14:05Z", now, seconds=True) == "12月2日 10:14:05"
