"""The Library shows a document's import warning beside it, in the UI language, and its whole
import report inside its entry; the Chinese page has no English words in it. Documents with the
same title are told apart by their file's name beside the title."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from actors import ImportWarning
from tests.corpus import make_app, run_import
from tests.web.conftest import service_for
from tests.web.test_ask_page import found, texts_of
from tests.web.test_untranslated import english_words, visible_texts
from web.i18n import TEXTS, Texts
from web.import_report_view import warning_sentence
from web.pages import register

pytestmark = pytest.mark.anyio

REALWORLD = Path(__file__).resolve().parents[1] / "realworld"
BOOK = "idpf-haruko-html-jpeg.epub"  # 12 pictures, a Japanese title


@pytest.fixture(scope="module")
def book_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-home")
    folder = root / "docs"
    folder.mkdir()
    shutil.copy(REALWORLD / "epub" / BOOK, folder / "book.epub")
    (folder / "notes.md").write_text("# Notes\n\nNothing to warn about here.\n", encoding="utf-8")
    assert run_import(make_app(root / "home"), [folder]).status == "ready"
    return root / "home"


@pytest.mark.parametrize(
    ("lang", "sentence", "count", "pages_fact"),
    [
        ("en", "12 images are not read", "1 with import warnings", "characters ("),
        ("zh", "有 12 张图片没有读取", "其中 1 个有导入警告", "个字符(中日韩文字占"),
    ],
)
async def test_the_warning_is_beside_the_document_in_the_ui_language(
    ui_user: User,
    book_home: Path,
    no_keys: None,
    lang: str,
    sentence: str,
    count: str,
    pages_fact: str,
) -> None:
    register(service_for(book_home, ui={"language": lang}))
    await ui_user.open("/library")
    await ui_user.should_see(marker="document-warning")
    (warned,) = found(ui_user, "document-warning")
    assert warned.props["caption"].startswith(sentence)
    assert texts_of(ui_user, "documents-with-warnings") == [count]
    # the report, inside each entry: the book's warning, and each document's facts
    shown = [text for _, text in visible_texts(ui_user)]
    assert sum(sentence in text for text in shown) == 2  # beside the book, and in its report
    facts = texts_of(ui_user, "report-fact")
    assert any(pages_fact in fact for fact in facts)
    assert len(found(ui_user, "import-report")) == 2
    if lang == "zh":  # the report's own words (the documents' titles are theirs)
        ours = [*facts, warned.props["caption"], *texts_of(ui_user, "documents-with-warnings")]
        words = english_words([("report", text) for text in ours], frozenset())
        assert words == [], "\n".join(words)


@pytest.fixture(scope="module")
def same_titles_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("same-titles")
    folder = root / "docs"
    (folder / "week1").mkdir(parents=True)
    (folder / "week2").mkdir()
    (folder / "week1" / "notes.md").write_text("# Reading notes\n\nOn rivers.\n", encoding="utf-8")
    (folder / "week2" / "notes.md").write_text("# Reading  NOTES\n\nOn lakes.\n", encoding="utf-8")
    # Latin-1, so it lands with a warning: the file's name comes first, then the warning
    (folder / "old.md").write_bytes("# Reading notes\n\nCaf\xe9 au lait.\n".encode("latin-1"))
    (folder / "plan.md").write_text("# Plan\n\nNothing shares this title.\n", encoding="utf-8")
    assert run_import(make_app(root / "home"), [folder]).status == "ready"
    return root / "home"


async def test_documents_with_the_same_title_show_their_file_names(
    ui_user: User, same_titles_home: Path, no_keys: None
) -> None:
    register(service_for(same_titles_home))
    await ui_user.open("/library")
    await ui_user.should_see(marker="document-row")
    rows = [
        (e.text, e.props.get("caption"))
        for row in found(ui_user, "document-row")
        for e in row.descendants()
        if isinstance(e, ui.expansion)
    ]
    shown = sorted(caption or "" for title, caption in rows if title.casefold().startswith("read"))
    latin = warning_sentence(Texts("en"), ImportWarning(code="legacy_encoding", message=""))
    assert shown == [f"old.md · {latin}", "week1/notes.md", "week2/notes.md"]
    assert [caption for title, caption in rows if title == "Plan"] == [None]


def test_every_warning_a_parser_gives_has_a_sentence_in_both_languages() -> None:
    parsing = Path(__file__).resolve().parents[2] / "engine" / "parsing"
    codes = {
        code
        for source in parsing.glob("*.py")
        for code in re.findall(r'\bcode="([a-z_]+)"', source.read_text(encoding="utf-8"))
    }
    assert {"images_not_read", "ocr_page_limit", "unreadable_pages"} <= codes
    assert sorted(c for c in codes if f"report.w.{c}" not in TEXTS) == []
    warning = ImportWarning(code="ocr_page_limit", message="…", pages=(4, 5), count=2)
    assert warning_sentence(Texts("en"), warning).startswith("2 scanned pages were not")
    assert "第 4, 5 页" in warning_sentence(Texts("zh"), warning)
    unknown = ImportWarning(code="made_up", message="…")
    assert warning_sentence(Texts("zh"), unknown) == Texts("zh")("report.w.unknown")
