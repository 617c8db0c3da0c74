"""Model output rendered as Markdown can never carry live HTML, scripts or remote images."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from web.safe_markdown import render_markdown, sanitize_html


class _Live(HTMLParser):
    """The tags and attributes a browser would act on (escaped text is not live)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(k, v or "") for k, v in attrs]


def live(html: str) -> _Live:
    parser = _Live()
    parser.feed(html)
    return parser


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "[click](javascript:alert(1))",
        '<iframe src="http://evil.example"></iframe>',
        '<div style="background:url(http://evil.example/x)">x</div>',
        "<svg onload=alert(1)>",
    ],
)
def test_raw_html_in_an_answer_is_shown_as_text_not_run(attack: str) -> None:
    html = render_markdown(f"Answer {attack} end")
    found = live(html)
    assert not {"script", "img", "iframe", "svg", "object"} & set(found.tags), html
    assert not [k for k, _ in found.attrs if k.startswith("on") or k == "style"], html
    assert not [v for k, v in found.attrs if k == "href" and not v.startswith(("http", "#"))]
    assert "Answer" in html and "end" in html


def test_markdown_images_never_load_a_remote_url() -> None:
    html = render_markdown("See ![diagram](http://evil.example/track.png) here")
    assert "evil.example" not in html and "img" not in live(html).tags
    assert "[diagram]" in html


def test_ordinary_markdown_still_renders() -> None:
    html = render_markdown(
        "**bold** and *it*\n\n- one\n- two\n\n```\na < b\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n[docs](https://example.org/x?a=1&b=2)"
    )
    assert "<strong>bold</strong>" in html and "<em>it</em>" in html
    assert "<li>one</li>" in html and "<table>" in html and "<td>2</td>" in html
    assert "a &lt; b" in html
    assert 'href="https://example.org/x?a=1&amp;b=2"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_sanitizer_drops_what_markdown_could_never_produce() -> None:
    dirty = '<p onclick="x()">hi<object data="x"></object><a href="data:text/html,x">y</a></p>'
    assert sanitize_html(dirty) == (
        '<p>hi<a rel="noopener noreferrer nofollow" target="_blank">y</a></p>'
    )
