"""engine/parsing/main_content.py: a web page keeps its article and loses its chrome, on small
pages shaped like real ones (a Sphinx FAQ page, a news page's boxes of links)."""

from __future__ import annotations

from pathlib import Path

from engine.parsing import ParsedDocument, parse_file

# The shape of python-faq/extending.html: each question is a <section> whose <h2> is a link back
# to the contents plus a permalink "¶"; one answer is a single line around a link.
FAQ_PAGE = """<!DOCTYPE html>
<html><head><title>Extending/Embedding FAQ — Python 3.11 documentation</title></head>
<body>
<div class="document"><div class="body" role="main">
<section id="extending-embedding-faq">
<h1>Extending/Embedding FAQ<a class="headerlink" href="#extending-embedding-faq">¶</a></h1>
<nav class="contents" id="contents"><p class="topic-title">Contents</p><ul>
<li><a class="reference internal" href="#can-i-create-my-own-functions-in-c" id="id1">Can I
create my own functions in C?</a></li>
<li><a class="reference internal" href="#how-do-i-use-py-buildvalue" id="id9">How do I use
Py_BuildValue() to create a tuple of arbitrary length?</a></li>
</ul></nav>
<section id="can-i-create-my-own-functions-in-c">
<h2><a class="toc-backref" href="#id1" role="doc-backlink">Can I create my own functions in
C?</a><a class="headerlink" href="#can-i-create-my-own-functions-in-c">¶</a></h2>
<p>Yes, you can create built-in modules containing functions, variables, exceptions and even
new types in C. This is explained in the document <a href="../extending/index.html">Extending
and Embedding the Python Interpreter</a>.</p>
</section>
<section id="how-do-i-use-py-buildvalue">
<h2><a class="toc-backref" href="#id9" role="doc-backlink">How do I use Py_BuildValue() to
create a tuple of arbitrary length?</a><a class="headerlink" href="#how-do-i-use-py-buildvalue"
title="Permalink to this heading">¶</a></h2>
<p>You can’t.  Use <a class="reference internal" href="../c-api/tuple.html#c.PyTuple_Pack"><code
class="xref c c-func docutils literal notranslate"><span class="pre">PyTuple_Pack()</span></code
></a> instead.</p>
</section>
</section>
<div>
<h3><a href="/news/2024/interpreter-release">A new interpreter release is out today</a></h3>
<h3><a href="/news/2024/packaging-survey">The packaging survey results are in</a></h3>
</div>
<div><h2><a href="#" id="moreComments">Read the comments on this page</a></h2></div>
</div></div>
</body></html>
"""


def _parse(tmp_path: Path) -> ParsedDocument:
    page = tmp_path / "extending.html"
    page.write_text(FAQ_PAGE, encoding="utf-8")
    return parse_file(page)


def test_short_answer_under_a_heading_linked_to_its_own_page_is_kept(tmp_path: Path) -> None:
    doc = _parse(tmp_path)
    question = "How do I use Py_BuildValue() to create a tuple of arbitrary length?"
    section = next((s for s in doc.sections if s.title == question), None)
    assert section is not None, [s.title for s in doc.sections]
    assert [p.text for p in section.paragraphs] == [
        question,
        "You can’t. Use PyTuple_Pack() instead.",
    ]


def test_boxes_of_links_to_other_pages_stay_out_even_under_headings(tmp_path: Path) -> None:
    # Headline links to other pages and a "#" script link still count as link text; the
    # contents list is links into the page, but not in a heading.
    doc = _parse(tmp_path)
    text = "\n".join(p.text for s in doc.sections for p in s.paragraphs)
    assert "Can I create my own functions in C?" in [s.title for s in doc.sections]
    for chrome in (
        "Contents",
        "A new interpreter release is out today",
        "Read the comments on this page",
        "¶",
    ):
        assert chrome not in text
