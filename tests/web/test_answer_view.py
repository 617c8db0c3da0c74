"""The streaming cursor sits after the answer's last character, inside its last block."""

from __future__ import annotations

import msgspec

from web.answer_view import CURSOR, chip_label, with_cursor
from web.safe_markdown import sanitize_html, to_html


def test_the_cursor_follows_the_last_word_of_a_paragraph() -> None:
    assert with_cursor(to_html("Listeners run")) == f"<p>Listeners run{CURSOR}</p>\n"


def test_the_cursor_stays_inside_the_last_list_item() -> None:
    markup = with_cursor(to_html("- one\n- two"))
    assert markup.index("two") < markup.index(CURSOR) < markup.index("</li>\n</ul>")


def test_an_empty_answer_is_just_the_cursor_and_survives_sanitising() -> None:
    assert with_cursor("") == CURSOR
    assert sanitize_html(with_cursor(to_html("a"))) == f"<p>a{CURSOR}</p>\n"


def test_a_citation_located_by_a_scan_but_never_read_is_labelled_so() -> None:
    from engine.harness import Citation
    from web.i18n import Texts

    located = Citation(
        index=2,
        citation="d1#b1",
        doc_id="d1",
        block_id="b1",
        valid=False,
        problem="located_not_read",
        title="Node events",
        section_path="Node events / Emitters",
    )
    assert chip_label(Texts("en"), located) == "[2?] Node events · Emitters · located, not read"
    assert chip_label(Texts("zh"), located).endswith("仅定位，未读全文")
    read = msgspec.structs.replace(located, valid=True, problem=None)
    assert chip_label(Texts("en"), read) == "[2] Node events · Emitters"
