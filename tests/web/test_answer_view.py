"""The streaming cursor sits after the answer's last character, inside its last block."""

from __future__ import annotations

from web.answer_view import CURSOR, with_cursor
from web.safe_markdown import sanitize_html, to_html


def test_the_cursor_follows_the_last_word_of_a_paragraph() -> None:
    assert with_cursor(to_html("Listeners run")) == f"<p>Listeners run{CURSOR}</p>\n"


def test_the_cursor_stays_inside_the_last_list_item() -> None:
    markup = with_cursor(to_html("- one\n- two"))
    assert markup.index("two") < markup.index(CURSOR) < markup.index("</li>\n</ul>")


def test_an_empty_answer_is_just_the_cursor_and_survives_sanitising() -> None:
    assert with_cursor("") == CURSOR
    assert sanitize_html(with_cursor(to_html("a"))) == f"<p>a{CURSOR}</p>\n"
