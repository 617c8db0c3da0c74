"""The UI's sentences for a document's import report, in English and Chinese; part of the one
table in web/i18n.py (merged there).

`report.w.{code}` is the sentence for each warning code a parser gives (engine/parsing/);
placeholders: {n} how many (bytes, images, pages), {pages} the pages in words. A warning
without a sentence here shows `report.w.unknown`, its English message under details.
"""

from __future__ import annotations

REPORT_TEXTS: dict[str, tuple[str, str]] = {
    "report.title": ("Import report", "导入报告"),
    "report.none": (
        "No import report: this document was imported by an earlier version of Citewise. "
        "Import it again to get one.",
        "没有导入报告:这个文档是用早期版本的 Citewise 导入的。重新导入即可生成报告。",
    ),
    "report.pages": (
        "{pages} {pages|page|pages}, {with_text} with text",
        "共 {pages} 页,其中 {with_text} 页有文字",
    ),
    "report.ocr": (
        "{n} {n|page|pages} recognised from scans, confidence {confidence}",
        "{n} 页由扫描图像识别,可信度 {confidence}",
    ),
    "report.low_confidence": ("Recognised with low confidence: {pages}", "识别可信度低:{pages}"),
    "report.chars": (
        "{chars} characters ({cjk} Chinese, Japanese or Korean)",
        "{chars} 个字符(中日韩文字占 {cjk})",
    ),
    "report.lang": ("Language: {lang}", "语言:{lang}"),
    "report.lang.en": ("English", "英文"),
    "report.lang.zh": ("Chinese", "中文"),
    "report.time": ("Read in {seconds} s", "读取用时 {seconds} 秒"),
    "report.no_warnings": ("No warnings.", "没有警告。"),
    "report.caption_more": ("{first} (and {n} more)", "{first}(另有 {n} 条)"),
    "report.with_warnings": ("{n} with import warnings", "其中 {n} 个有导入警告"),
    "report.page_one": ("page {pages}", "第 {pages} 页"),
    "report.page_many": ("pages {pages}", "第 {pages} 页"),
    "report.recognise_all": ("Recognise all pages", "识别所有页面"),
    "report.recognising": (
        "Importing {source} again with every scanned page recognised…",
        "正在重新导入 {source},识别所有扫描页……",
    ),
    # one sentence per warning code
    "report.w.ocr_page_limit": (
        "{n} scanned {n|page was|pages were} not recognised ({pages}): only so many pages of "
        "a document are recognised unless you ask. Choose “Recognise all pages” to include "
        "them.",
        "有 {n} 页扫描页没有识别({pages}):每个文档默认只识别一定数量的页面。点击“识别所有页面”"
        "即可把它们也导入。",
    ),
    "report.w.ocr_failed": (
        "Text recognition failed on {pages}, so {n|it is|they are} missing; the rest was imported.",
        "{pages}的文字识别失败,这 {n} 页缺失;其余内容已导入。",
    ),
    "report.w.ocr_low_confidence": (
        "The scan of {pages} was recognised with low confidence; check what is quoted from it "
        "against the page.",
        "{pages}的扫描文字识别可信度较低;引用时请对照原页面核对。",
    ),
    "report.w.pdf_cut_off": (
        "This PDF stops before its end (perhaps an unfinished download), so pages may be "
        "missing. Import a complete copy to have all of it.",
        "这个 PDF 在结尾之前就中断了(可能没有下载完整),可能缺少页面。请导入完整的副本。",
    ),
    "report.w.pdf_repaired": (
        "This PDF is damaged; it was repaired while being read, as PDF viewers do. If a page "
        "seems to be missing, compare it with the original.",
        "这个 PDF 已损坏;读取时已像 PDF 阅读器那样修复。如果某页似乎缺失,请与原文件对照。",
    ),
    "report.w.pdf_pages_damaged": (
        "{pages} of this PDF {n|is|are} damaged and could not be read; the other pages were "
        "imported.",
        "这个 PDF 的{pages}({n} 页)已损坏、无法读取;其余页面已导入。",
    ),
    "report.w.unreadable_pages": (
        "The text of {pages} cannot be read (its fonts do not say which letters they draw), "
        "so it was left out; the other pages were imported.",
        "{pages}的文字无法读取(字体没有说明画的是哪些字),因此没有导入;其余页面已导入。",
    ),
    "report.w.legacy_encoding": (
        "This file is not in UTF-8; it was read as Western European text. If accented "
        "letters look wrong, save it as UTF-8 and import it again.",
        "这个文件不是 UTF-8 编码,已按西欧文字读取。如果带重音的字母显示不对,请另存为 UTF-8 "
        "后重新导入。",
    ),
    "report.w.replaced_bytes": (
        "{n} {n|place was|places were} not valid text and {n|was|were} replaced with �; the "
        "rest was read as written.",
        "有 {n} 处不是有效的文字,已替换为 �;其余内容按原样读取。",
    ),
    "report.w.running_text_only": (
        "The body of this document is empty, so the text of its headers and footers was "
        "imported instead.",
        "这份文档的正文是空的,因此导入了它的页眉和页脚中的文字。",
    ),
    "report.w.images_not_read": (
        "{n} {n|image is|images are} not read: text shown inside images is not in the "
        "library (captions and the text around them are).",
        "有 {n} 张图片没有读取:图片里的文字不在资料库中(图注和周围的文字在)。",
    ),
    "report.w.unknown": (
        "Something about this import is worth checking; see the details.",
        "这次导入有需要留意的地方;请查看详情。",
    ),
}
