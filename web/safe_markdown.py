"""Model output as Markdown that can never become live HTML, scripts or remote requests.

Raw HTML in the text is escaped before rendering (markdown2's escape mode), and the rendered
HTML is rebuilt from an allow-list: no <img> (an image becomes its alt text), no event
attributes, no style, links only to http(s) and opened without a referrer. Used as the
server-side `sanitize` of ui.markdown, so the browser never receives anything else.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

import markdown2

EXTRAS = ["fenced-code-blocks", "tables", "strike", "cuddled-lists"]

_PLAIN_TAGS = (
    "p br hr em strong b i del s code pre blockquote ul ol li "
    "h1 h2 h3 h4 h5 h6 table thead tbody tr th td sup sub"
)
_ALLOWED: dict[str, frozenset[str]] = {tag: frozenset() for tag in _PLAIN_TAGS.split(" ")}
_ALLOWED["a"] = frozenset({"href", "title"})
_ALLOWED["span"] = frozenset({"class"})
_ALLOWED["div"] = frozenset({"class"})
_ALLOWED["ol"] = frozenset({"start"})
_VOID = frozenset({"br", "hr"})
_DROP_CONTENT = frozenset({"script", "style", "iframe", "object", "embed", "svg", "math"})


def _safe_href(value: str) -> str | None:
    v = value.strip()
    low = v.lower()
    if low.startswith(("http://", "https://")) or low.startswith("#"):
        return v
    return None


class _Rebuild(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._open: list[str] = []
        self._dropping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP_CONTENT:
            self._dropping += 1
            return
        if self._dropping:
            return
        if tag == "img":
            alt = next((v for k, v in attrs if k == "alt" and v), "")
            self.out.append(html.escape(f"[{alt or 'image'}]"))
            return
        allowed = _ALLOWED.get(tag)
        if allowed is None:
            return  # unknown tag: keep its text, drop the tag
        kept = []
        for name, value in attrs:
            if name not in allowed or value is None:
                continue
            if name == "href":
                href = _safe_href(value)
                if href is None:
                    continue
                value = href
            if name == "class" and not all(c.replace("-", "").isalnum() for c in value.split()):
                continue
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        if tag == "a":
            kept.append(' rel="noopener noreferrer nofollow" target="_blank"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in _VOID:
            self._open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in self._open and tag not in _VOID and self._open[-1] == tag:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_CONTENT:
            self._dropping = max(0, self._dropping - 1)
            return
        if self._dropping or tag not in self._open:
            return
        while self._open:
            top = self._open.pop()
            self.out.append(f"</{top}>")
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._dropping:
            self.out.append(html.escape(data, quote=False))

    def close(self) -> None:
        super().close()
        while self._open:
            self.out.append(f"</{self._open.pop()}>")


def sanitize_html(markup: str) -> str:
    """Rebuild `markup` keeping only allow-listed tags and attributes (text is re-escaped)."""
    parser = _Rebuild()
    parser.feed(markup)
    parser.close()
    return "".join(parser.out)


def to_html(text: str) -> str:
    """Markdown to HTML with every raw HTML tag of the text escaped (not yet allow-listed)."""
    return str(markdown2.markdown(text, safe_mode="escape", extras=EXTRAS))


def render_markdown(text: str) -> str:
    """Safe HTML for untrusted Markdown (model answers, document text)."""
    return sanitize_html(to_html(text))
