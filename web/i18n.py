"""Every piece of UI text, in English and Chinese, from one table.

Pages call `Texts(lang)(key, **values)`; a key missing here is a bug (KeyError), never a
silently blank label. Messages say what happened and what to do. No text is built elsewhere.
A count's noun is written `{n} {n|question|questions}` (one form, other form); Chinese needs no
plural, only its measure word (`{n} 个问题`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from web.i18n_errors import ERROR_TEXTS
from web.i18n_report import REPORT_TEXTS
from web.i18n_traces import TRACE_TEXTS

Lang = Literal["en", "zh"]
LANGUAGES: dict[Lang, str] = {"en": "English", "zh": "中文"}

# key: (English, Chinese)
TEXTS: dict[str, tuple[str, str]] = {
    # shell
    "app.title": ("Citewise", "Citewise"),
    "nav.ask": ("Ask", "提问"),
    "nav.library": ("Library", "资料库"),
    "nav.settings": ("Settings", "设置"),
    "nav.traces": ("Traces", "追踪"),
    "nav.wizard": ("Setup", "初始设置"),
    "shell.collection": ("Collection", "资料集"),
    "shell.language": ("Language", "语言"),
    "error.unexpected": (
        "Something went wrong inside Citewise ({detail}). Please try again; if it keeps "
        "happening, report it with the Traces page's diagnostic bundle.",
        "Citewise 内部出错({detail})。请重试;如果反复出现,请在“追踪”页导出诊断包并反馈。",
    ),
    "error.prefix": ("Could not do that: {detail}", "无法完成:{detail}"),
    # no native window (web/launcher.py): what happened, and the one thing to do
    "window.title": ("Citewise", "Citewise"),
    "window.no_webview2": (
        "Citewise could not open its own window, because this computer does not have the "
        "Microsoft Edge WebView2 Runtime that the window needs. To get the window: install "
        "“Microsoft Edge WebView2 Runtime” from Microsoft’s website (the "
        "Evergreen installer), then start Citewise again.",
        "Citewise 无法打开自己的窗口,因为这台电脑缺少窗口所需的 Microsoft Edge WebView2 "
        "Runtime。如需使用窗口:从微软官网安装“Microsoft Edge WebView2 Runtime”(Evergreen "
        "安装程序),然后重新启动 Citewise。",
    ),
    "window.failed": (
        "Citewise could not open its own window on this computer. To get the window: "
        "restart the computer, then start Citewise again.",
        "Citewise 无法在这台电脑上打开自己的窗口。如需使用窗口:重新启动电脑,然后再次启动 "
        "Citewise。",
    ),
    "window.in_browser": (
        "Meanwhile Citewise has opened in your web browser and works the same there; your "
        "documents and settings are all there.",
        "在此期间,Citewise 已在你的网页浏览器中打开,功能完全相同,你的资料和设置都在。",
    ),
    "window.open_address": (
        "Meanwhile you can use Citewise in your web browser: open this address there (it "
        "works only on this computer, until Citewise is closed): {url}",
        "在此期间,你可以在网页浏览器中使用 Citewise:在浏览器中打开这个地址(只在这台电脑上"
        "有效,关闭 Citewise 后失效):{url}",
    ),
    # ask page
    "ask.placeholder": (
        "Ask a question about your documents…",
        "就你的资料提一个问题……",
    ),
    "ask.send": ("Ask", "提问"),
    "ask.stop": ("Stop", "停止"),
    "ask.new": ("New conversation", "新对话"),
    "ask.history": ("Conversations", "历史对话"),
    "ask.no_history": ("No conversations yet.", "还没有对话。"),
    "ask.turns": ("{n} {n|question|questions}", "{n} 个问题"),
    "ask.empty_question": ("Type a question first.", "请先输入问题。"),
    "ask.busy": (
        "A question is still being answered; wait or press Stop.",
        "上一个问题仍在回答中;请等待或按“停止”。",
    ),
    "ask.thinking": ("Thinking (turn {turn})…", "思考中(第 {turn} 轮)……"),
    "ask.final_turn": ("Writing the final answer…", "正在写最终回答……"),
    "ask.tool": ("Using {tool}: {detail}", "调用 {tool}:{detail}"),
    "ask.tool_done": ("{tool}: {outcome}", "{tool}:{outcome}"),
    "ask.retracted": (
        "The text shown so far was withdrawn ({reason}); the answer is being redone.",
        "已撤回目前显示的文字({reason}),正在重新生成回答。",
    ),
    "ask.stopped": (
        "Stopped. No answer was recorded; ask again when you are ready.",
        "已停止。本次没有记录回答;准备好后可以重新提问。",
    ),
    "ask.no_answer": ("No answer ({reason}): {message}", "没有回答({reason}):{message}"),
    "ask.under_limit": (
        "This answer was given under a limit ({reason}); it may be incomplete.",
        "本回答是在限制下给出的({reason}),可能不完整。",
    ),
    "ask.summary": (
        "{turns} {turns|turn|turns} · {tools} {tools|tool call|tool calls} · {tokens} chat "
        "{tokens|token|tokens} · {cost} {currency}",
        "{turns} 轮 · {tools} 次工具调用 · {tokens} 个对话 token · {cost} {currency}",
    ),
    "ask.sources": ("Sources", "来源"),
    "ask.unverified": ("unverified source", "未验证的来源"),
    "ask.unverified_hint": (
        "The answer cites a block that was not retrieved for it; it is not shown as evidence.",
        "回答引用了本次未检索到的块,不作为证据显示。",
    ),
    "ask.located": ("located, not read", "仅定位，未读全文"),
    "ask.located_hint": (
        "The model saw only a short snippet of this block (a term scan), not its text: it is "
        "not evidence for the sentence.",
        "模型只看到了该块的一小段摘录(字面扫描),没有读到全文:它不能作为这句话的证据。",
    ),
    "ask.page": ("p. {page}", "第 {page} 页"),
    "ask.pages": ("pp. {start}–{end}", "第 {start}–{end} 页"),
    "ask.partial_banner": (
        "The knowledge base is incomplete: {n} {n|document|documents} failed to import "
        "({sources}). Answers cannot use them. The Library page says why each one failed "
        "and what to do.",
        "知识库不完整:{n} 篇文档导入失败({sources}),回答无法使用它们。“资料库”页写明了每篇失败的"
        "原因和解决办法。",
    ),
    "ask.refused_banner": (
        "Some evidence did not fit into the budget and was left out: {detail}. The answer may "
        "be incomplete; raise the budgets in Settings or narrow the question.",
        "部分证据超出预算而未被采用:{detail}。回答可能不完整;可在“设置”中提高预算或缩小问题范围。",
    ),
    "ask.finalizing_banner": ("Finishing early: {message}", "提前收尾:{message}"),
    "ask.trimmed": (
        "Earlier questions left out of this conversation's context: {reason}",
        "本对话较早的问答未放入上下文:{reason}",
    ),
    "ask.no_snapshot": (
        "There are no documents in this collection yet. Add some on the Library page first.",
        "此资料集还没有文档。请先在“资料库”页添加。",
    ),
    "ask.no_key": (
        "No DeepSeek API key is saved yet, so this question could not be answered. Add the "
        "key in Settings, then ask again.",
        "还没有保存 DeepSeek API Key,所以无法回答这个问题。请在“设置”中添加后再提问。",
    ),
    "ask.key_needed": (
        "Answers need a DeepSeek API key, and none is saved yet: add it in Settings. Until "
        "then, “Look things up without a model” on the Library page finds passages in your "
        "documents without a key.",
        "回答问题需要 DeepSeek API Key,目前还没有保存:请在“设置”中添加。在此之前,"
        "“资料库”页的“直接查找(不调用模型)”无需 Key 也能在你的文档中查找段落。",
    ),
    "gauge.title": ("Budget", "预算"),
    "gauge.context": (
        "Context {used} / {limit} {limit|token|tokens}",
        "上下文 {used} / {limit} 个 token",
    ),
    "gauge.request": (
        "Request {used} / {limit} {limit|token|tokens}",
        "本次请求 {used} / {limit} 个 token",
    ),
    "gauge.tools": ("Tool calls {used} / {limit}", "工具调用 {used} / {limit}"),
    # source viewer
    "source.title": ("Source", "来源"),
    "source.close": ("Close", "关闭"),
    "source.section": ("Section: {section}", "章节:{section}"),
    "source.not_found": ("This source cannot be shown: {message}", "无法显示此来源:{message}"),
    "source.no_page_image": ("No page image: {message}", "没有页面图像:{message}"),
    "source.cited": ("cited", "被引用"),
    "source.ocr": (
        "Text recognised from a scanned page (confidence {confidence} %): check it on the page",
        "由扫描页面识别出的文字(可信度 {confidence}%),请对照原页面核对",
    ),
    "source.pdf_unknown": (
        "The page cannot be drawn: where the original PDF was imported from is not known. "
        "The block's text is shown above; import the file again to see its pages.",
        "无法显示页面:不知道原始 PDF 是从哪里导入的。"
        "上面显示的是该块的文字;重新导入该文件即可查看页面。",
    ),
    "source.pdf_moved": (
        "The page cannot be drawn: the original PDF is no longer at {path}. The block's text is "
        "shown above; move the file back, or import it again from its new place.",
        "无法显示页面:原始 PDF 已不在 {path}。"
        "上面显示的是该块的文字;把文件移回原处,或从新位置重新导入。",
    ),
    "source.pdf_changed": (
        "The page cannot be drawn: the PDF at {path} has changed since it was imported, so its "
        "pages no longer match. The block's text is shown above; import the file again to "
        "update it.",
        "无法显示页面:{path} 处的 PDF 在导入后被修改过,页面已对不上。"
        "上面显示的是该块的文字;重新导入该文件即可更新。",
    ),
    # source viewer: the whole PDF page, zoom, page turning, the original file
    "source.page_label": ("page {label} (PDF page {page})", "第 {label} 页(PDF 第 {page} 页)"),
    "source.pdf_page": ("PDF page {page}", "PDF 第 {page} 页"),
    "source.page_count": ("{pages} pages in all", "共 {pages} 页"),
    "source.prev_page": ("Previous page", "上一页"),
    "source.next_page": ("Next page", "下一页"),
    "source.zoom_in": ("Zoom in", "放大"),
    "source.zoom_out": ("Zoom out", "缩小"),
    "source.zoom_fit": ("Whole page", "整页"),
    "source.zoom_hint": (
        "Ctrl + mouse wheel over the page zooms too.",
        "在页面上按住 Ctrl 并滚动鼠标滚轮也可缩放。",
    ),
    "source.open_original": ("Open the original PDF at this page", "在原始 PDF 中打开此页"),
    "source.context": ("In the document", "在文档中的位置"),
    "source.marked_by_text": (
        "The cited text is marked where it was found on the page: this document was imported "
        "before Citewise kept where each block is printed. For exact marks, remove it in the "
        "Library and import it again.",
        "被引用的文字是按内容在页面上查找后标出的:该文档导入时 Citewise 还没有记录每段的位置。"
        "如需精确标记,请在“资料库”中移除该文档后重新导入。",
    ),
    "source.not_on_page": (
        "The cited block is not on this page; it is on {pages}.",
        "被引用的段落不在本页,而在{pages}。",
    ),
    "source.not_marked": (
        "The cited text could not be found on this page; its text is shown beside the page.",
        "未能在本页找到被引用的文字;其文字显示在页面旁边。",
    ),
    "source.original_gone": (
        "The original PDF cannot be opened: {message}",
        "无法打开原始 PDF:{message}",
    ),
    # library
    "lib.import": ("Add documents", "添加文档"),
    "lib.upload": ("Drop files here or click to choose", "拖放文件到这里,或点击选择"),
    "lib.path": ("…or a file or folder on this computer", "……或本机上的文件或文件夹路径"),
    "lib.path_hint": (
        "Folders are searched recursively; unsupported files are listed as skipped.",
        "会递归搜索文件夹;不支持的文件会列为已跳过。",
    ),
    "lib.start": ("Import", "导入"),
    "lib.no_path": ("Enter a file or folder path first.", "请先输入文件或文件夹路径。"),
    "lib.pause": ("Pause", "暂停"),
    "lib.resume": ("Resume", "继续"),
    "lib.cancel": ("Cancel", "取消"),
    "lib.resume_interrupted": (
        "An import of this collection was interrupted. Resume it?",
        "此资料集有一次中断的导入。要继续吗?",
    ),
    "lib.resume_button": ("Resume import", "继续导入"),
    "lib.state.running": ("Importing…", "正在导入……"),
    "lib.state.paused": ("Paused", "已暂停"),
    "lib.state.building": ("Building the new snapshot…", "正在生成新快照……"),
    "lib.state.done": ("Import finished", "导入完成"),
    "lib.state.cancelled": (
        "Import cancelled; the knowledge base is unchanged.",
        "导入已取消,知识库未改变。",
    ),
    "lib.state.failed": ("Import failed: {error}", "导入失败:{error}"),
    "lib.progress.documents": (
        "Documents {done} / {total} ({failed} failed)",
        "文档 {done} / {total}(失败 {failed})",
    ),
    "lib.progress.percent": ("{percent} %", "{percent}%"),
    "lib.progress.pages": ("{done} / {total} {total|page|pages} read", "已读 {done} / {total} 页"),
    "lib.progress.blocks": (
        "{done} / {total} {total|block|blocks} embedded",
        "已向量化 {done} / {total} 个块",
    ),
    "lib.progress.tokens": (
        "{tokens} embedding {tokens|token|tokens}",
        "{tokens} 个向量 token",
    ),
    "lib.progress.eta": ("About {eta} left", "预计还需 {eta}"),
    "lib.progress.eta_pace": ("About {eta} left · {pace}", "预计还需 {eta} · {pace}"),
    "lib.progress.pace_blocks": ("{n} {n|block|blocks} a second", "每秒 {n} 个块"),
    "lib.progress.pace_pages": ("{n} {n|page|pages} a second", "每秒 {n} 页"),
    "lib.progress.ocr": (
        "{done} / {total} scanned {total|page|pages} recognised",
        "已识别扫描页 {done} / {total}",
    ),
    "lib.progress.ocr_cached": (
        "{n} {n|page|pages} recognised before (kept)",
        "{n} 页此前已识别(沿用)",
    ),
    "lib.progress.pace_ocr": ("{n} scanned {n|page|pages} a second", "每秒识别 {n} 页"),
    "lib.progress.pace_ocr_every": ("a scanned page every {every}", "每 {every}识别 1 页"),
    "lib.progress.pace_blocks_every": ("a block every {every}", "每 {every}向量化 1 个块"),
    "lib.progress.pace_pages_every": ("a page every {every}", "每 {every}读取 1 页"),
    "lib.progress.cached": (
        "{n} {n|block|blocks} already embedded (kept)",
        "{n} 个块此前已向量化(沿用)",
    ),
    "lib.progress.eta_unknown": ("Estimating time left…", "正在估算剩余时间……"),
    "lib.progress.almost": ("Almost done…", "马上就好……"),
    "lib.eta.seconds": ("{s} s", "{s} 秒"),
    "lib.eta.minutes": ("{m} min {s} s", "{m} 分 {s} 秒"),
    "lib.eta.hours": ("{h} h {m} min", "{h} 小时 {m} 分"),
    # the closing message: the whole library, then what this import did
    "lib.closing.library": (
        "{n} {n|document|documents} in the library",
        "资料库中共有 {n} 篇文档",
    ),
    "lib.closing.added": ("{n} added", "新增 {n} 篇"),
    "lib.closing.re_embedded": (
        "{n} {n|document|documents} embedded again for the new embedding model or vector layout",
        "{n} 篇已按新的向量模型或向量布局重新向量化",
    ),
    "lib.closing.re_read": (
        "{n} {n|document|documents} read again as this version of Citewise reads "
        "{n|it|them}, {blocks} {blocks|block|blocks} changed",
        "已按当前版本的读取方式重新读取 {n} 篇文档，{blocks} 个块有变化",
    ),
    "lib.closing.read_again": (
        "pages recognised again in {n} {n|document|documents}, {blocks} {blocks|block|blocks} "
        "changed",
        "已重新识别 {n} 篇文档的页面，{blocks} 个块有变化",
    ),
    "lib.closing.unchanged": ("{n} unchanged", "{n} 篇未变化"),
    "lib.closing.failed": (
        "{n} could not be imported — see why below",
        "{n} 篇无法导入——原因见下方",
    ),
    "lib.closing.resumed": (
        "{n} {n|document|documents} finished before the interruption kept",
        "沿用中断前已完成的 {n} 篇",
    ),
    "lib.closing.vectors_reused": (
        "{n} {n|block|blocks} not embedded again",
        "{n} 个块无需重新向量化",
    ),
    "lib.closing.skipped": (
        "{n} {n|file|files} skipped (not a type Citewise reads)",
        "跳过 {n} 个 Citewise 不支持的文件",
    ),
    "lib.closing.separator": ("; ", ";"),
    "lib.closing.end": (".", "。"),
    "lib.doc_state.queued": ("waiting", "等待中"),
    "lib.doc_state.parsing": ("reading", "读取中"),
    "lib.doc_state.embedding": ("embedding", "向量化中"),
    "lib.doc_state.done": ("done", "完成"),
    "lib.doc_state.reused": ("unchanged", "未变化"),
    "lib.doc_state.failed": ("failed", "失败"),
    "lib.failed": ("Documents that could not be imported", "未能导入的文档"),
    # import failures: what happened to one file and one thing to do, by reason code
    # (engine/parsing, actors/discovery.py, actors/ingest.py, engine/errors.py's embedding
    # codes); "fail.<stage>.<reason>" where one code means different things by stage.
    "lib.fail.row": ("{source} could not be imported", "{source} 无法导入"),
    "lib.fail.details": ("Details", "详情"),
    "lib.fail.details_code": ("Stage: {stage} · code: {reason}", "阶段:{stage} · 代码:{reason}"),
    "fail.corrupt": (
        "The file is damaged or incomplete, so it cannot be read. Get a fresh copy (or open it "
        "and save it again) and import that.",
        "文件已损坏或不完整,无法读取。请重新获取一份(或打开后重新保存),再导入。",
    ),
    "fail.encrypted": (
        "The file is protected by a password. Save a copy without the password (for example "
        "by printing it to PDF) and import that.",
        "文件有密码保护。请另存一份不带密码的副本(例如“打印”为 PDF),再导入。",
    ),
    "fail.no_text_layer": (
        "This PDF holds only pictures of pages (it is probably a scan), so there is no text to "
        "read. Run it through text recognition (OCR) in a PDF editor and import the result.",
        "这个 PDF 只有页面图片(可能是扫描件),没有可读取的文字。请先用 PDF 编辑器做文字识别(OCR),"
        "再导入结果。",
    ),
    # Only PDFs fail so, and only after Citewise's own text recognition (when it is on) read
    # the pages in vain: the details say which pages, and whether recognition ran.
    "fail.unreadable_text": (
        "The text in this PDF cannot be read reliably: its fonts do not say which letters they "
        "draw, and text recognition did not recover it. Export it again from the program that "
        "made it and import the result.",
        "这个 PDF 中的文字无法可靠读取:它的字体没有说明所画的是哪些字,文字识别也没能读出来。"
        "请用生成它的程序重新导出,再导入。",
    ),
    "fail.no_text": (
        "The file contains no text to import. Check that it is the file you meant.",
        "文件中没有可导入的文字。请确认这是你想导入的文件。",
    ),
    "fail.empty_file": (
        "The file is empty. It may not have finished copying or downloading; check it and "
        "import it again.",
        "文件是空的,可能还没有复制或下载完成。请检查后重新导入。",
    ),
    "fail.too_large": (
        "The file is too large to import in one piece. Split it into smaller files and import "
        "those.",
        "文件太大,无法一次导入。请拆分成较小的文件后再导入。",
    ),
    "fail.archive_too_large": (
        "The file unpacks into far more data than a document should. Save it again from the "
        "program that made it, or split it, and import that.",
        "这个文件解压后的数据量远超正常文档。请用生成它的程序重新保存或拆分后再导入。",
    ),
    "fail.unsafe_archive": (
        "The file is packed in a way that could write outside it, so it was not opened. Get "
        "the document from a source you trust, or save it again, and import that.",
        "这个文件的打包方式可能写到文件之外,因此没有打开。请从可信的来源获取,或重新保存后再导入。",
    ),
    "fail.unsupported_type": (
        "Citewise cannot read this type of file. Convert it to PDF, EPUB, Word (DOCX), "
        "Markdown, HTML or plain text and import that.",
        "Citewise 无法读取这种类型的文件。请转换为 PDF、EPUB、Word(DOCX)、Markdown、HTML "
        "或纯文本后再导入。",
    ),
    "fail.invalid_encoding": (
        "The file's characters are in an encoding Citewise does not recognise. Save it again "
        "as UTF-8 text and import it.",
        "无法识别这个文件的字符编码。请另存为 UTF-8 文本后再导入。",
    ),
    "fail.changed": (
        "The file changed while it was being read. Import it again once it is saved.",
        "文件在读取过程中发生了变化。请在它保存完成后重新导入。",
    ),
    "fail.timeout": (
        "Reading this file took far too long; it may be damaged. Open it and save it again, "
        "then import it.",
        "读取这个文件耗时过长,它可能已损坏。请打开后重新保存,再导入。",
    ),
    "fail.unreadable": (
        "The file could not be opened: it may have been moved or deleted, or another program "
        "is holding it. Check that it is there and import it again.",
        "无法打开这个文件:它可能已被移动或删除,或正被其他程序占用。请确认文件还在后重新导入。",
    ),
    "fail.in_use": (
        "Another program has this file open and does not let others read it (for example Word "
        "while it is being edited). Close it there, then import it again.",
        "另一个程序正打开这个文件,且不允许其他程序读取(例如正在 Word 中编辑)。"
        "请在那里关闭后重新导入。",
    ),
    "fail.path_too_long": (
        "The file is inside too many folders for Windows to open it (its path is longer than "
        "260 characters). Move it to a folder nearer the top of the drive and import it again.",
        "这个文件所在的文件夹层级太深(路径超过 260 个字符),Windows 无法打开。"
        "请把它移到更靠近磁盘根目录的文件夹后重新导入。",
    ),
    "fail.not_found": (
        "Nothing was found at this place. Check that the file or folder still exists there and "
        "import it again.",
        "在这个位置没有找到内容。请确认文件或文件夹仍在那里,然后重新导入。",
    ),
    "fail.bad_name": (
        "The file's name contains characters Citewise cannot store. Rename the file and import "
        "it again.",
        "文件名中有 Citewise 无法保存的字符。请给文件改名后重新导入。",
    ),
    "fail.reader_unavailable": (
        "Citewise could not start its document reader, so this file was not read. It is not "
        "the file's fault. Restart Citewise and import it again.",
        "Citewise 无法启动文档读取程序,因此没有读取这个文件。这不是文件的问题。请重新启动 Citewise "
        "后再导入。",
    ),
    "fail.chunk_error": (
        "Something went wrong inside Citewise while splitting this document into blocks. "
        "Import it again; if it fails again, please report it.",
        "Citewise 在把这篇文档切分成块时内部出错。请重新导入;如果再次失败,请反馈这个问题。",
    ),
    "fail.unauthorized": (
        "The embedding service refused the key. Check the embedding key in Settings, then "
        "import the file again.",
        "向量化服务拒绝了这个 Key。请在“设置”中检查向量化 Key,然后重新导入。",
    ),
    "fail.no_balance": (
        "The embedding account has no credit left. Top it up with the vendor (or choose the "
        "built-in model in Settings), then import the file again.",
        "向量化账户余额不足。请向服务商充值(或在“设置”中改用内置模型),然后重新导入。",
    ),
    "fail.quota": (
        "The embedding service's quota is used up. Wait until it renews or raise it with the "
        "vendor, then import the file again.",
        "向量化服务的配额已用完。请等待配额恢复或向服务商提高配额,然后重新导入。",
    ),
    "fail.rate_limited": (
        "The embedding service is receiving too many requests right now. Wait a minute, then "
        "import the file again.",
        "向量化服务当前请求过多。请等一分钟后重新导入。",
    ),
    "fail.server_error": (
        "The embedding service had a problem on its side. Wait a moment, then import the file "
        "again.",
        "向量化服务自身出了问题。请稍等片刻后重新导入。",
    ),
    "fail.embed.timeout": (
        "The embedding service did not answer in time. Check your internet connection, then "
        "import the file again.",
        "向量化服务没有及时响应。请检查网络连接,然后重新导入。",
    ),
    "fail.connection": (
        "Citewise could not reach the embedding service. Check your internet connection (and "
        "proxy), then import the file again.",
        "Citewise 无法连接向量化服务。请检查网络连接(以及代理),然后重新导入。",
    ),
    "fail.bad_request": (
        "The embedding service refused the request: its address or model name may be wrong. "
        "Check the embedding settings in Settings, then import the file again.",
        "向量化服务拒绝了请求:服务地址或模型名称可能有误。请在“设置”中检查向量化设置,然后重新导入。",
    ),
    "fail.bad_response": (
        "The embedding service sent back something Citewise cannot use. Check the embedding "
        "settings in Settings, then import the file again.",
        "向量化服务返回了无法使用的内容。请在“设置”中检查向量化设置,然后重新导入。",
    ),
    "fail.wrong_dimension": (
        "The embedding model returned vectors of another size than the one set. Check the "
        "embedding model in Settings, then import the file again.",
        "向量化模型返回的向量维度与设置不符。请在“设置”中检查向量化模型,然后重新导入。",
    ),
    "fail.unknown": (
        "This file could not be imported. Open the details to see what happened, then import it "
        "again.",
        "这个文件未能导入。请打开“详情”查看原因,然后重新导入。",
    ),
    "lib.failed_row": ("{source} — {message}", "{source} — {message}"),
    "lib.retry": ("Retry", "重试"),
    "lib.documents": ("Documents", "文档"),
    "lib.no_documents": (
        "No documents yet. Add files or a folder above.",
        "还没有文档。请在上方添加文件或文件夹。",
    ),
    "lib.doc_meta": (
        "{source} · {format} · {blocks} {blocks|block|blocks} · {sections} "
        "{sections|section|sections}",
        "{source} · {format} · {blocks} 个块 · {sections} 个章节",
    ),
    "lib.outline": ("Outline", "目录"),
    "lib.doc_label": ("Shown as: {label}", "显示为:{label}"),
    "lib.doc_aliases": ("Also known as: {aliases}", "别名:{aliases}"),
    "lib.edit": ("Edit", "编辑"),
    "lib.edit_title": ("Edit {source}", "编辑 {source}"),
    "lib.edit_field_title": ("Title", "标题"),
    "lib.edit_field_label": ("Source label", "来源名称"),
    "lib.edit_field_aliases": ("Aliases, one per line", "别名(每行一个)"),
    "lib.edit_note": (
        "Saving makes a new snapshot (nothing is read or embedded again); importing the file "
        "again keeps these names.",
        "保存会生成新快照(不会重新读取或向量化);以后重新导入该文件也会保留这些名称。",
    ),
    "lib.edit_save": ("Save", "保存"),
    "lib.edited": ("Saved: the document is now “{title}”.", "已保存:文档现在名为“{title}”。"),
    "lib.edit_unchanged": ("Nothing changed.", "没有变化。"),
    "lib.remove": ("Remove", "移除"),
    "lib.remove_confirm": (
        "Remove {source} from the library? New questions will not find it. Nothing is "
        "deleted: older snapshots keep it, so you can go back to one in the snapshot history.",
        "从资料库移除 {source}?之后的提问将找不到它。不会删除任何内容:旧快照仍保留它,"
        "可以在快照历史中回到旧快照。",
    ),
    "lib.removed": ("{source} removed.", "已移除 {source}。"),
    "lib.already_removed": (
        "{source} was already removed; nothing changed. The list below is up to date.",
        "{source} 此前已被移除，资料库没有变化。下方列表已更新。",
    ),
    "lib.snapshots": ("Snapshot history", "快照历史"),
    "lib.snapshot_row": (
        "{created} · {status} · {documents} {documents|document|documents} · {blocks} "
        "{blocks|block|blocks}",
        "{created} · {status} · {documents} 篇文档 · {blocks} 个块",
    ),
    "lib.active": ("active", "当前"),
    "lib.activate": ("Go back to this", "回到此版本"),
    "lib.activated": (
        "The library is back as it was on {when} ({documents} {documents|document|documents}).",
        "资料库已回到 {when} 时的状态({documents} 篇文档)。",
    ),
    "lib.gc": ("Clean up old snapshots", "清理旧快照"),
    "lib.gc_done": (
        "Cleaned up: {deleted} old {deleted|snapshot|snapshots} deleted, {kept} kept, {pinned} "
        "still in use by a question.",
        "清理完成:删除 {deleted} 个旧快照,保留 {kept} 个,{pinned} 个仍被提问使用。",
    ),
    "lib.collections": ("Collections", "资料集"),
    "lib.switch": ("Switch", "切换"),
    "lib.create": ("Create", "新建"),
    "lib.rename": ("Rename", "重命名"),
    "lib.delete": ("Delete", "删除"),
    "lib.new_name": ("Name", "名称"),
    "lib.delete_confirm": (
        "Delete the collection {name} with its {documents} {documents|document|documents} and "
        "{snapshots} {snapshots|snapshot|snapshots}? This cannot be undone. The original files "
        "on your computer are not touched.",
        "删除资料集 {name} 及其 {documents} 篇文档和 {snapshots} 个快照?此操作无法撤销。"
        "你电脑上的原始文件不受影响。",
    ),
    "lib.confirm": ("Yes, do it", "确定"),
    "lib.keep": ("No", "取消"),
    "lib.tools": ("Look things up without a model", "直接查找(不调用模型)"),
    "lib.tool.search": ("Search", "搜索"),
    "lib.tool.scan": ("Find every occurrence", "查找全部出现"),
    "lib.tool.list": ("List a section", "列出章节"),
    "lib.tool.query": ("Words to search for", "搜索词"),
    "lib.tool.term": ("Exact text", "精确文本"),
    "lib.tool.document": ("Document", "文档"),
    "lib.tool.all_documents": ("All documents", "全部文档"),
    "lib.tool.section": ("Section (empty = whole document)", "章节(留空 = 全文)"),
    "lib.tool.run": ("Run", "运行"),
    "lib.tool.need_query": (
        "Type the words to search for first.",
        "请先输入要搜索的词。",
    ),
    "lib.tool.need_term": (
        "Type the exact text to find first.",
        "请先输入要查找的精确文本。",
    ),
    "lib.tool.need_document": (
        "Add a document first: there is nothing to list yet.",
        "请先添加文档:目前还没有可列出的内容。",
    ),
    "lib.tool.empty.no_match": (
        "Nothing found. Try other words, or search all documents.",
        "没有找到。请换些词试试,或在全部文档中搜索。",
    ),
    "lib.tool.empty.scope_empty": (
        "This part of the document has no text to show. Choose another section or document.",
        "文档的这一部分没有可显示的文字。请选择其他章节或文档。",
    ),
    "lib.tool.empty.collection_empty": (
        "This collection has no documents yet. Add some above first.",
        "这个资料集还没有文档。请先在上方添加。",
    ),
    "lib.tool.error.invalid_argument": (
        "That cannot be looked up as typed. Use fewer, shorter words and run it again.",
        "这样输入无法查找。请用更少、更短的词再运行一次。",
    ),
    "lib.tool.error.scope_not_found": (
        "That document is no longer in the library. Reload the page and choose again.",
        "该文档已不在资料库中。请刷新页面后重新选择。",
    ),
    "lib.tool.error.collection_unavailable": (
        "The library cannot be read right now. Reload the page; if it stays, see the Library "
        "page's notice.",
        "现在无法读取资料库。请刷新页面;如果仍然如此,请查看“资料库”页的提示。",
    ),
    "lib.tool.error.upstream_unavailable": (
        "The embedding model did not answer, so searching by meaning failed. Try again, or "
        "use Find every occurrence, which needs no model.",
        "向量模型没有响应,按语义搜索失败。请重试,或使用不需要模型的“查找全部出现”。",
    ),
    "lib.tool.error.tool_internal_error": (
        "Looking this up failed because of a problem in Citewise. Try again; the details "
        "below help a bug report.",
        "由于 Citewise 内部问题,查找失败。请重试;下方的详情可用于报告问题。",
    ),
    "lib.tool.hits": ("{count} {count|occurrence|occurrences}", "共出现 {count} 次"),
    "lib.tool.blocks": ("{total} {total|block|blocks}", "{total} 个块"),
    "lib.upload_saved": ("Received {name}", "已接收 {name}"),
    # settings
    "set.title": ("Settings", "设置"),
    "set.save": ("Save settings", "保存设置"),
    "set.saved": ("Settings saved.", "设置已保存。"),
    "set.invalid": ("Not saved: {message}", "未保存:{message}"),
    "set.field_invalid": (
        "“{label}” has a value Citewise cannot use, so nothing was saved. Correct the field "
        "marked in red and save again.",
        "“{label}”的值无法使用,因此没有保存。请改正标红的那一项后再保存。",
    ),
    "set.field_invalid_here": ("This value cannot be used", "此值无法使用"),
    "set.source.default": ("Default", "默认值"),
    "set.source.file": ("Saved", "已保存"),
    "set.source.env": ("Set by an environment variable", "由环境变量设定"),
    "set.env_banner": (
        "Some settings below come from environment variables that were set when Citewise "
        "started. They win over what is saved here, so changing those fields has no effect "
        "until the variables are removed.",
        "下面有些设置来自 Citewise 启动时设定的环境变量。它们优先于这里保存的值,"
        "所以在移除这些变量之前,修改这些字段不会生效。",
    ),
    "set.env_field": (
        "In effect: {value}, set by an environment variable (saved here: {saved})",
        "当前生效:{value},由环境变量设定(这里保存的是:{saved})",
    ),
    "set.env_details": ("{variable} sets {setting}", "{variable} 设定了 {setting}"),
    "set.key.not_set": ("No key saved yet", "尚未保存 Key"),
    "set.key.set_short": ("a key is saved", "已保存一个 Key"),
    "set.env_note": (
        "Set by an environment variable (it wins over the file): {keys}",
        "以下设置由环境变量指定(优先于配置文件):{keys}",
    ),
    "set.budget": ("Budgets", "预算"),
    "set.max_context_tokens": ("Max context tokens", "单次上下文上限(token)"),
    "set.max_request_tokens": ("Max tokens per request", "单次请求上限(token)"),
    "set.finalization_reserve_tokens": ("Reserve for the final answer", "最终回答预留(token)"),
    "set.max_tool_calls": ("Max tool calls", "工具调用次数上限"),
    "set.chat": ("Chat model", "对话模型"),
    "set.base_url": ("Base URL", "Base URL"),
    "set.model": ("Model", "模型"),
    "set.timeout_s": ("Timeout (s)", "超时(秒)"),
    "set.max_output_tokens": ("Max output tokens", "最大输出 token"),
    "set.prices": ("Prices per million tokens", "每百万 token 价格"),
    "set.input_cache_hit": ("Input, cache hit", "输入(缓存命中)"),
    "set.input_cache_miss": ("Input, cache miss", "输入(未命中缓存)"),
    "set.output": ("Output", "输出"),
    "set.currency": ("Currency", "货币"),
    "set.daily_cap": ("Daily spending cap (0 = none)", "每日花费上限(0 = 不限)"),
    "set.monthly_cap": ("Monthly spending cap (0 = none)", "每月花费上限(0 = 不限)"),
    "spend.title": ("Spending on chat requests", "对话请求花费"),
    "spend.today": ("Today ({when}): {spent}, no daily cap", "今天({when}):{spent},未设每日上限"),
    "spend.today_capped": (
        "Today ({when}): {spent} of the daily cap {cap}",
        "今天({when}):{spent},每日上限 {cap}",
    ),
    "spend.month": (
        "This month ({when}): {spent}, no monthly cap",
        "本月({when}):{spent},未设每月上限",
    ),
    "spend.month_capped": (
        "This month ({when}): {spent} of the monthly cap {cap}",
        "本月({when}):{spent},每月上限 {cap}",
    ),
    "spend.reached_today": (
        "The daily cap is reached: new questions are refused until tomorrow, or until you raise "
        "the cap.",
        "已达到每日上限:在明天之前(或提高上限之前)新的提问会被拒绝。",
    ),
    "spend.reached_month": (
        "The monthly cap is reached: new questions are refused until next month, or until you "
        "raise the cap.",
        "已达到每月上限:在下个月之前(或提高上限之前)新的提问会被拒绝。",
    ),
    "spend.other_currencies": (
        "Costs recorded in another currency ({currencies}) are not counted here.",
        "以其他货币({currencies})记录的花费未计入此处。",
    ),
    "spend.note": (
        "Costs are computed from the prices above and the usage the model reports. Set the caps "
        "under Chat model (0 = no cap); a cap refuses new questions, never one already running.",
        "花费按上方“每百万 token 价格”和模型报告的用量计算。上限在“对话模型”中设置(0 = 不限);"
        "达到上限后会拒绝新的提问,但不会中断正在进行的回答。",
    ),
    "spend.cap_reached_day": (
        "The daily spending cap is reached ({spent} of {cap} today), so this question was not "
        "sent. Raise or clear the daily cap in Settings, or ask again tomorrow.",
        "已达到每日花费上限(今天已花 {spent},上限 {cap}),所以这个问题没有发送。"
        "请在“设置”中提高或取消每日上限,或明天再问。",
    ),
    "spend.cap_reached_month": (
        "The monthly spending cap is reached ({spent} of {cap} this month), so this question "
        "was not sent. Raise or clear the monthly cap in Settings, or ask again next month.",
        "已达到每月花费上限(本月已花 {spent},上限 {cap}),所以这个问题没有发送。"
        "请在“设置”中提高或取消每月上限,或下个月再问。",
    ),
    "bundle.title": ("Prompt bundles", "提示词包"),
    "bundle.row": ("{ref} · {source} · {status}", "{ref} · {source} · {status}"),
    "bundle.source.release": ("shipped", "内置"),
    "bundle.source.local": ("local experiment", "本地实验"),
    "bundle.status.frozen": ("frozen", "已冻结"),
    "bundle.status.draft": ("draft (not frozen)", "草稿(未冻结)"),
    "bundle.status.modified": ("changed after freezing", "冻结后被修改"),
    "bundle.status.broken": ("unusable", "不可用"),
    "bundle.active": ("used for new questions", "新提问使用中"),
    "bundle.promote": ("Make baseline", "设为基线"),
    "bundle.promote_confirm": (
        "Make {ref} the baseline for every new question, replacing {current}? The differences:",
        "将 {ref} 设为所有新提问的基线,替换 {current}?差异如下:",
    ),
    "bundle.promoted": ("{ref} is now the baseline.", "{ref} 现在是基线。"),
    "bundle.rollback": ("Roll back", "回滚"),
    "bundle.rollback_note": (
        "Returns to the baseline used before the last promotion.",
        "回到上一次设为基线之前使用的版本。",
    ),
    "bundle.rollback_confirm": (
        "Return to the baseline that was used before the last promotion?",
        "回到上一次设为基线之前使用的基线?",
    ),
    "bundle.rolled_back": (
        "Rolled back: {ref} is the baseline again.",
        "已回滚:{ref} 重新成为基线。",
    ),
    "bundle.a": ("Compare", "比较"),
    "bundle.b": ("with", "与"),
    "bundle.diff": ("Show differences", "显示差异"),
    "bundle.choose_two": ("Choose two bundles to compare.", "请选择两个要比较的提示词包。"),
    "bundle.same": ("{a} and {b} are the same.", "{a} 与 {b} 相同。"),
    "set.embedding": ("Embeddings", "向量模型"),
    "set.provider": ("Provider", "提供方"),
    "set.provider.local": (
        "Built-in model (offline, no key)",
        "内置模型(离线,无需 Key)",
    ),
    "set.provider.openai_compatible": (
        "OpenAI-compatible endpoint",
        "OpenAI 兼容接口",
    ),
    "set.dimensions": ("Dimensions", "维度"),
    "set.ocr_group": ("Scanned documents", "扫描文档"),
    "set.ocr": (
        "Recognise scanned PDF pages (offline OCR)",
        "识别扫描版 PDF 页面(离线文字识别)",
    ),
    "set.ocr_max_pages": (
        "Most pages recognised per document",
        "每个文档最多识别的页数",
    ),
    "set.network": ("Network", "网络"),
    "set.proxy": ("Proxy (empty = system setting)", "代理(留空 = 使用系统设置)"),
    "set.ca_bundle": ("CA bundle file (empty = system)", "CA 证书文件(留空 = 系统默认)"),
    "set.retention": ("Retention", "保留策略"),
    "set.keep_last": ("Keep the last N snapshots", "保留最近 N 个快照"),
    "set.keep_days": ("…and those younger than N days", "……以及 N 天内的快照"),
    "set.trace": ("Traces", "追踪"),
    "set.trace_mode": ("Trace mode", "追踪模式"),
    "set.trace_mode.metadata": ("Metadata only (default)", "仅元数据(默认)"),
    "set.trace_mode.full": (
        "Full diagnostics (keeps prompts and evidence)",
        "完整诊断(保存提示词与证据)",
    ),
    "set.retention_days": ("Keep traces for N days", "追踪保留天数"),
    "set.language": ("Language", "语言"),
    "set.keys": ("API keys", "API Key"),
    "set.key.deepseek": ("DeepSeek API key", "DeepSeek API Key"),
    "set.key.embedding": ("Embedding API key", "向量接口 API Key"),
    "set.no_keyring": (
        "This computer has no credential store: keys saved here last until Citewise closes. "
        "To keep them for good, set them as environment variables before starting Citewise "
        "(the details name them).",
        "此电脑没有凭据库:在这里保存的 Key 只在 Citewise 关闭前有效。"
        "如需长期保存,请在启动 Citewise 前把它们设为环境变量(详情中列出了变量名)。",
    ),
    "set.no_keyring_details": (
        "Environment variables: {deepseek} (DeepSeek), {embedding} (embeddings)",
        "环境变量:{deepseek}(DeepSeek),{embedding}(向量接口)",
    ),
    "set.key.placeholder": ("Paste the key here", "在此粘贴 Key"),
    "set.key.current": ("Stored: {shown}", "已保存:{shown}"),
    "set.key.save": ("Save key", "保存 Key"),
    "set.key.test": ("Test connection", "测试连接"),
    "set.key.testing": ("Testing…", "正在测试……"),
    "set.key.stored_keyring": (
        "Key saved in the system credential store ({shown}).",
        "Key 已保存到系统凭据库({shown})。",
    ),
    "set.key.stored_session": (
        "This computer has no credential store, so the key ({shown}) is kept in memory for this "
        "session only. To keep it for good, set it as an environment variable before starting "
        "Citewise (the details name it).",
        "此电脑没有凭据库,Key({shown})只在本次运行的内存中保留。"
        "如需长期保存,请在启动前把它设为环境变量(详情中列出了变量名)。",
    ),
    "set.key.env_details": ("Environment variable: {env}", "环境变量:{env}"),
    "set.key.empty": ("Paste the key first.", "请先粘贴 Key。"),
    "ask.trace": ("Trace of this answer", "查看本次回答的追踪"),
    "ask.trace_partial": (
        "The trace of this answer is partial ({dropped} {dropped|record|records} lost).",
        "本次回答的追踪不完整(丢失 {dropped} 条记录)。",
    ),
    # wizard
    "wiz.title": ("Welcome to Citewise", "欢迎使用 Citewise"),
    "wiz.intro": (
        "Five short steps take you from nothing to your first answered question.",
        "五个简单步骤,带你从零开始得到第一个有出处的回答。",
    ),
    "wiz.step.language": ("Language", "语言"),
    "wiz.step.chat": ("DeepSeek key", "DeepSeek Key"),
    "wiz.step.embedding": ("Embeddings", "向量模型"),
    "wiz.step.documents": ("Add documents", "添加文档"),
    "wiz.step.ask": ("First question", "第一个问题"),
    "wiz.next": ("Next", "下一步"),
    "wiz.back": ("Back", "上一步"),
    "wiz.skip": ("Skip setup", "跳过设置"),
    "wiz.chat_help": (
        "Answers are written by DeepSeek with your own key. Paste it and test it; it is "
        "stored in the system credential store, never in a file.",
        "回答由 DeepSeek 使用你自己的 Key 生成。粘贴并测试;Key 保存在系统凭据库中,绝不写入文件。",
    ),
    "wiz.embedding_help": (
        "Documents are turned into vectors for search. The built-in model works offline "
        "without a key; a cloud endpoint needs its own key.",
        "文档需要向量化以便检索。内置模型离线可用、无需 Key;云端接口需要单独的 Key。",
    ),
    "wiz.test_and_next": ("Test and continue", "测试并继续"),
    "wiz.chat_help_session": (
        "Answers are written by DeepSeek with your own key. Paste it and test it. This "
        "computer has no credential store, so the key lasts until Citewise closes (Settings "
        "says how to keep it).",
        "回答由 DeepSeek 使用你自己的 Key 生成。粘贴并测试。此电脑没有凭据库,Key 只在 Citewise "
        "关闭前有效(“设置”页说明了如何长期保存)。",
    ),
    "wiz.need_ok": (
        "The test must pass before you continue. No key yet? Continue without one: you can "
        "add documents and look things up in them, and add the key in Settings later.",
        "测试通过后才能继续。还没有 Key?可以先不设置 Key 继续:照样能添加文档并在其中查找,"
        "以后再到“设置”中添加 Key。",
    ),
    "wiz.without_key": ("Continue without a key", "先不设置 Key,继续"),
    "wiz.documents_help": (
        "Add a few files or a folder. You can add more later on the Library page.",
        "添加几个文件或一个文件夹。之后可以在“资料库”页继续添加。",
    ),
    "wiz.wait_import": (
        "Wait for the import to finish before you continue.",
        "请等待导入完成后再继续。",
    ),
    "wiz.ask_help": (
        "Ask something your documents answer. Citations show where each point comes from.",
        "问一个资料中有答案的问题。引用会标明每个要点的出处。",
    ),
    "wiz.finish": ("Ask", "提问"),
    # ask and library
    "ask.enter_hint": (
        "Enter sends · Shift+Enter starts a new line",
        "按 Enter 发送 · Shift+Enter 换行",
    ),
    "ask.history_row": ("{n} {n|question|questions} · {when}", "{n} 个问题 · {when}"),
    "ask.still_running": (
        "Still being answered (asked before this page was reloaded); the answer appears here "
        "when it is ready.",
        "仍在回答中(在本页重新加载前提出);回答完成后会显示在这里。",
    ),
    "ask.no_answer_recorded": (
        "No answer was recorded ({reason}). Ask again to try once more.",
        "没有记录到回答({reason})。可以重新提问再试一次。",
    ),
    "ask.export_answer": ("Download as Markdown", "下载为 Markdown"),
    "ask.export_conversation": ("Download the conversation", "下载整个对话"),
    "export.no_answer": ("No answer ({reason}).", "没有回答({reason})。"),
    "export.meta": ("Asked {when} · {cost}", "提问于 {when} · {cost}"),
    "export.conversation_title": (
        "Citewise conversation, {when}",
        "Citewise 对话,{when}",
    ),
    "gauge.intro": (
        "Limits for this one question (set in Settings). When one is reached, the model stops "
        "looking and answers with what it has found, and the answer says so.",
        "本次提问的上限(在“设置”中调整)。达到任一上限时,模型停止查找,用已找到的内容作答,"
        "并在回答中说明。",
    ),
    "gauge.context_hint": (
        "How much the model reads at once: your question, earlier answers of this conversation "
        "and the passages found so far.",
        "模型一次读入的内容:你的问题、本对话之前的回答,以及目前找到的段落。",
    ),
    "gauge.request_hint": (
        "Everything this question has used so far, over all its steps; this is what it costs.",
        "本次提问到目前为止所有步骤用掉的总量;花费按它计算。",
    ),
    "gauge.tools_hint": (
        "Searches and look-ups in your documents.",
        "在你的资料中搜索和查阅的次数。",
    ),
    "time.months": (
        "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec",
        "1 2 3 4 5 6 7 8 9 10 11 12",
    ),
    "time.this_year": ("{day} {month} {time}", "{month}月{day}日 {time}"),
    "time.other_year": ("{day} {month} {year} {time}", "{year}年{month}月{day}日 {time}"),
    "lib.snapshot_status.ready": ("complete", "完整"),
    "lib.snapshot_status.ready_partial": ("some documents failed", "部分文档失败"),
    "lib.snapshot_status.building": ("being built", "生成中"),
    "lib.snapshot_status.failed": ("failed", "失败"),
    "lib.change.added": ("+{n} added", "新增 {n} 篇"),
    "lib.change.removed": ("−{n} removed", "移除 {n} 篇"),
    "lib.change.edited": ("{n} edited", "修改 {n} 篇"),
    "lib.change.read_again": ("{n} read again", "重新读取 {n} 篇"),
    "lib.change.failed": ("{n} failed", "失败 {n} 篇"),
    "lib.change.none": (
        "No document added, removed or changed",
        "没有新增、移除或修改文档",
    ),
    "lib.change.unknown": (
        "What changed is not known: the snapshot before it was cleaned up",
        "无法得知变化:之前的快照已被清理",
    ),
    "lib.rollback_confirm": (
        "Go back to the library as it was on {when} ({documents} {documents|document|documents})?",
        "回到 {when} 时的资料库({documents} 篇文档)?",
    ),
    "lib.rollback_added": (
        "The {n} {n|document|documents} added since will not be searched.",
        "此后添加的 {n} 篇文档将不再被检索。",
    ),
    "lib.rollback_removed": (
        "The {n} {n|document|documents} removed since will be searched again.",
        "此后移除的 {n} 篇文档将重新被检索。",
    ),
    "lib.rollback_edited": (
        "{n} {n|document|documents} changed since will be answered from the older version.",
        "此后修改过的 {n} 篇文档将按旧版本回答。",
    ),
    "lib.rollback_same": (
        "It holds the same documents as the library now.",
        "它包含的文档与现在的资料库相同。",
    ),
    "lib.rollback_safe": (
        "Nothing is deleted: the current version stays in this list and you can come back to it.",
        "不会删除任何内容:当前版本仍保留在此列表中,可以随时切回。",
    ),
    "lib.rollback_yes": ("Go back", "回到此版本"),
    # damaged library (the active snapshot cannot be opened)
    "damage.title": (
        "The current version of your library cannot be opened: one of its files is missing or "
        "damaged.",
        "资料库的当前版本无法打开:其中有文件缺失或已损坏。",
    ),
    "damage.go_back": (
        "Go back to the version of {when} ({n} {n|document|documents}) to keep asking; nothing "
        "is deleted, and documents added since can be imported again.",
        "回到 {when} 的版本({n} 篇文档)即可继续提问;不会删除任何内容,之后新增的文档可以重新导入。",
    ),
    "damage.go_back_button": ("Go back to {when}", "回到 {when} 的版本"),
    "damage.went_back": (
        "The library is back to its version of {when}.",
        "资料库已回到 {when} 的版本。",
    ),
    "damage.reimport": (
        "There is no earlier version to go back to: import your documents again on the Library "
        "page to rebuild it.",
        "没有可以回退的早期版本:请在“资料库”页重新导入你的文档。",
    ),
    "damage.open_library": ("Open the library", "打开资料库"),
    "lib.remove_yes": ("Remove", "移除"),
    "lib.delete_yes": ("Delete the collection", "删除资料集"),
    "lib.gc_confirm": (
        "Delete the old snapshots, keeping the last {n}? You will not be able to go back to "
        "the ones deleted.",
        "删除旧快照,只保留最近 {n} 个?被删除的快照将无法再回到。",
    ),
    "lib.gc_days": (
        "Snapshots younger than {days} {days|day|days} are kept too.",
        "{days} 天内的快照也会保留。",
    ),
    "lib.gc_safe": (
        "The current library and questions being answered are not affected.",
        "当前资料库和正在回答的问题不受影响。",
    ),
    "lib.gc_yes": ("Delete old snapshots", "删除旧快照"),
    "lib.retrying": ("Importing {source} again…", "正在重新导入 {source}……"),
    "lib.retry_ok": ("{source} is imported now.", "{source} 已导入成功。"),
    "lib.retry_failed": ("{source} failed again. {message}", "{source} 再次失败。{message}"),
    "lib.retry_stopped": (
        "The new import of {source} did not finish; it is still listed as failed.",
        "{source} 的重新导入没有完成;它仍列为失败。",
    ),
    # upgrade page and the maintenance section of the settings (web/upgrade_page.py,
    # web/settings_maintenance.py)
    "upg.title": ("Upgrade your data", "升级数据"),
    "upg.intro": (
        "This version of Citewise stores some data differently. Read what changes; nothing "
        "happens until you confirm, and a copy of your data is kept.",
        "此版本的 Citewise 以不同方式保存部分数据。请先阅读变更内容;确认之前不会做任何改动,"
        "并且会保留一份数据副本。",
    ),
    "upg.confirm": ("Upgrade now", "立即升级"),
    "upg.running": ("Upgrading… (copying, converting, checking)", "正在升级……(复制、转换、检查)"),
    "upg.done": ("The upgrade is done.", "升级完成。"),
    "upg.backups": ("Backups this version can restore", "可恢复的备份"),
    "mnt.title": ("Versions and backups", "版本与备份"),
    "mnt.version": ("Citewise {version}", "Citewise {version}"),
    "mnt.check": ("Check for a newer version", "检查新版本"),
    "mnt.no_feed": (
        "No update feed is set ([updates] feed_url), so nothing was asked online.",
        "未设置更新源([updates] feed_url),因此没有联网查询。",
    ),
    "mnt.installed": ("Version {version} is installed in {path}.", "已安装版本 {version}:{path}。"),
    "mnt.available": ("Version {version} is available: {url}", "有新版本 {version}:{url}"),
    "mnt.up_to_date": ("No newer version is published.", "没有更新的版本。"),
    "mnt.never_auto": (
        "Nothing is downloaded or installed automatically.",
        "不会自动下载或安装任何内容。",
    ),
    "mnt.backups": ("Backups", "备份"),
    "mnt.no_backups": (
        "No backups yet; an upgrade makes one first.",
        "还没有备份;升级前会自动创建。",
    ),
    "mnt.restore": ("Restore", "恢复"),
    "mnt.restore_confirm": (
        "Replace your data with backup {id}? Your data as it is now is backed up first.",
        "用备份 {id} 替换当前数据?当前数据会先被备份。",
    ),
    "mnt.restored": (
        "Backup {id} is restored; restart Citewise to use it.",
        "备份 {id} 已恢复;请重新启动 Citewise 以使用它。",
    ),
    "mnt.cancel": ("Cancel", "取消"),
    "mnt.backup_now": ("Back up now", "立即备份"),
    "mnt.backed_up": (
        "Backed up as {id} (your keys are never in backups).",
        "已备份为 {id}(备份中从不包含密钥)。",
    ),
    "mnt.caches": ("Saved to speed up imports", "为加快导入而保存的数据"),
    "mnt.megabytes": ("{n} MB", "{n} MB"),
    "mnt.kilobytes": ("{n} KB", "{n} KB"),
    "mnt.cache_sizes": (
        "{total} in all: block embeddings {embeddings}, recognised pages {pages}, read documents "
        "{documents}. Your library does not need them; without them, a document imported again "
        "is read and embedded afresh, which takes longer.",
        "共 {total}:文本块向量 {embeddings},识别过的页面 {pages},已读取的文档 {documents}。"
        "资料库不依赖这些数据;清除后,再次导入的文档会重新读取并计算向量,耗时更长。",
    ),
    "mnt.cache_clear": ("Clear", "清除"),
    "mnt.cache_confirm": (
        "Clear {total} of saved import work? Your documents, answers and history stay as they are.",
        "清除 {total} 的导入缓存?你的文档、回答和历史记录都不受影响。",
    ),
    "mnt.cache_cleared": ("Cleared {total}.", "已清除 {total}。"),
}

# The errors' and key tests' sentences live in web/i18n_errors.py, the traces page's in
# web/i18n_traces.py, the import report's in web/i18n_report.py; one table all the same.
for _more in (ERROR_TEXTS, TRACE_TEXTS, REPORT_TEXTS):
    if TEXTS.keys() & _more.keys():
        raise RuntimeError(f"keys in two tables: {sorted(TEXTS.keys() & _more.keys())}")
    TEXTS.update(_more)


class Texts:
    """The UI text of one language: `t("key", name=value)`."""

    def __init__(self, lang: str) -> None:
        self.lang: Lang = "zh" if lang == "zh" else "en"
        self._column = 1 if self.lang == "zh" else 0

    def __call__(self, key: str, **values: object) -> str:
        text = TEXTS[key][self._column]
        if not values:
            return text
        return _PLURAL.sub(lambda m: _form(m, values), text).format(**values)


_PLURAL = re.compile(r"\{(\w+)\|([^{}|]*)\|([^{}|]*)\}")  # {n|one form|other form}


def _form(match: re.Match[str], values: dict[str, object]) -> str:
    """The singular when the count is exactly one, else the plural."""
    count = values[match.group(1)]
    try:
        one = float(str(count).replace(",", "")) == 1
    except ValueError:
        one = False
    return match.group(2) if one else match.group(3)


def when(t: Texts, iso: str, now: dt.datetime | None = None, *, seconds: bool = False) -> str:
    """An ISO-8601 UTC time as a person reads it, in local time: "2 Dec 10:14" (the year only
    when it is not this year's; `seconds` to tell apart times of one minute); text that is not
    a time is returned as it is."""
    try:
        moment = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    local = moment.astimezone(now.tzinfo if now is not None else None)
    today = now if now is not None else dt.datetime.now(local.tzinfo)
    month = t("time.months").split()[local.month - 1]
    key = "time.this_year" if local.year == today.year else "time.other_year"
    clock = f"{local:%H:%M:%S}" if seconds else f"{local:%H:%M}"
    return t(key, day=local.day, month=month, year=local.year, time=clock)
