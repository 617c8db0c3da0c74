"""A web page's main content: the article, without site chrome (navigation, related links,
cookie banners, share bars, comment threads).

A link-density rule: chrome dropped by tag, role, class and hidden style; the <article> or
<main> that holds most of the text; blocks that are mostly link text dropped, where a heading's
links to its own page (back-link to the contents, permalink) are not link text. Chosen over
trafilatura on Mozilla Readability's 130 test pages (bench/bench_html_extraction.py): as
clean and as complete, but it keeps headings trafilatura drops, keeps inline code inline, and
costs a third. Uses lxml's HTML parser, which fetches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

_CHROME = re.compile(
    r"(?i)(?:^|[-_\s])(?:nav|navbar|navigation|menu|breadcrumbs?|cookies?|consent|gdpr|banner|"
    r"related|share|sharing|social|comments?|footer|sidebar|widget|promo|advert|ads?|"
    r"newsletter|subscribe|popup|modal|masthead|skip|toolbar|pagination|tags|recommended|"
    r"trending|most-popular)(?:$|[-_\s])"
)
_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "nav",
        "footer",
        "aside",
        "form",
        "button",
        "select",
        "textarea",
        "iframe",
        "template",
        "svg",
        "canvas",
        "annotation",  # MathML's TeX source of a formula the page shows rendered
    }
)
_CHROME_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "dialog", "alertdialog"}
)
_HIDDEN_STYLE = re.compile(r"(?i)display\s*:\s*none|visibility\s*:\s*hidden")
_PRUNED = frozenset({"div", "section", "ul", "ol", "table", "dl", "header", "figure", "p", "li"})
_KEEP_CONTAINERS = frozenset({"html", "body", "article", "main"})
# A marked container is chrome only when it is not most of the page (some sites mark the
# article itself class="... comments-enabled ...").
_MAX_CHROME_CHARS = 2000
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# A link to a place on the same page ("#how-do-i"); "#" alone and "#!/route" are script actions
# and old single-page-app routes, which are navigation.
_IN_PAGE_HREF = re.compile(r"\s*#(?![!/])\S")


def _text_len(el: lxml.html.HtmlElement) -> int:
    return len(" ".join(el.text_content().split()))


def _link_len(el: lxml.html.HtmlElement, own: set[lxml.html.HtmlElement]) -> int:
    return sum(len(" ".join(a.text_content().split())) for a in el.iter("a") if a not in own)


def _heading_self_links(root: lxml.html.HtmlElement) -> set[lxml.html.HtmlElement]:
    """Links in headings that point into the page itself: a documentation generator's
    back-link to the contents and its permalink. They make a short section's heading all link
    text, and a section of a heading and a one-line answer would read as a menu; a "related"
    box's headline links lead to other pages and still count."""
    return {
        a
        for h in root.iter(*_HEADINGS)
        for a in h.iter("a")
        if _IN_PAGE_HREF.match(a.get("href") or "")
    }


def _elements(root: lxml.html.HtmlElement) -> Iterator[lxml.html.HtmlElement]:
    for el in root.iter():
        if isinstance(el.tag, str):
            yield el


def _is_chrome(el: lxml.html.HtmlElement) -> bool:
    tag = el.tag.lower()
    if tag in _KEEP_CONTAINERS:
        return False
    if tag in _DROP_TAGS or (el.get("role") or "").strip().lower() in _CHROME_ROLES:
        return True
    if el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or ""):
        return True
    # A class that starts "js-" is a script's hook, not what the element is: GitHub's README
    # box is "js-code-nav-container" (code navigation), which read as navigation.
    classes = [c for c in (el.get("class") or "").split() if not c.lower().startswith("js-")]
    marks = " ".join(filter(None, (*classes, el.get("id"))))
    return bool(marks and _CHROME.search(marks) and _text_len(el) < _MAX_CHROME_CHARS)


def link_density_cut(html: str) -> str | None:
    """The rule: drop chrome by tag, role and class; keep the <article>/<main> that holds
    most of the text; then drop blocks that are mostly link text, not counting a heading's
    links into the page itself. None if unparseable."""
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    for el in list(_elements(doc)):
        if el.getparent() is not None and _is_chrome(el):
            el.drop_tree()
    body = doc.find("body")
    if body is None:
        return None
    root = body
    candidates = [el for el in _elements(body) if el.tag in ("article", "main")]
    candidates += [el for el in _elements(body) if (el.get("role") or "").lower() == "main"]
    best = max(candidates, key=_text_len, default=None)
    if best is not None and _text_len(best) >= 0.4 * _text_len(body):
        root = best
    own = _heading_self_links(root)
    for el in reversed(list(_elements(root))):
        if el is root or el.getparent() is None or el.tag not in _PRUNED:
            continue
        n = _text_len(el)
        if n == 0:
            continue
        density = _link_len(el, own) / n
        # A paragraph is prose that may cite links ("Source files: a.js, b.js"); a list or a
        # box of mostly links is a menu or a "related" bar.
        limit = 0.8 if el.tag == "p" else 0.5
        if (density > limit and n < 1000) or (el.tag in ("ul", "ol") and density > 0.7):
            el.drop_tree()
    return str(lxml.html.tostring(root, encoding="unicode"))


def page_title(html: str) -> str:
    """The page's <title>, or "" (the cut content no longer has one)."""
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return ""
    return " ".join((doc.findtext(".//title") or "").split())
