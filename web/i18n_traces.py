"""The traces page's sentences, English and Chinese; web/i18n.py merges them into its one table.

A trace says what happened to an answer, so these are sentences a learner reads, not field
names: the story, the totals, the replays, re-run and comparison."""

from __future__ import annotations

TRACE_TEXTS: dict[str, tuple[str, str]] = {
    # the list
    "tr.list": ("Requests", "请求记录"),
    "tr.none": (
        "No traces yet: ask a question and its trace appears here.",
        "还没有追踪记录:提一个问题后,它的追踪会出现在这里。",
    ),
    "tr.none_found": (
        "No request matches: change the search or the filters.",
        "没有符合条件的请求:请修改搜索词或筛选条件。",
    ),
    "tr.pick": (
        "Choose a request on the left to see why its answer came out as it did.",
        "请在左侧选择一个请求,查看它的回答是怎样形成的。",
    ),
    "tr.search": ("Search the questions", "搜索问题"),
    "tr.filter.status": ("Status", "状态"),
    "tr.filter.status.any": ("all", "全部"),
    "tr.filter.status.ok": ("answered", "已回答"),
    "tr.filter.status.error": ("failed", "失败"),
    "tr.filter.status.running": ("still running", "进行中"),
    "tr.filter.period": ("Date", "日期"),
    "tr.filter.period.any": ("any time", "不限"),
    "tr.filter.period.today": ("today", "今天"),
    "tr.filter.period.week": ("last 7 days", "最近 7 天"),
    "tr.filter.period.month": ("last 30 days", "最近 30 天"),
    "tr.filter.order": ("Sort", "排序"),
    "tr.order.newest": ("newest first", "最新在前"),
    "tr.order.oldest": ("oldest first", "最早在前"),
    "tr.order.cost": ("most expensive", "花费最多"),
    "tr.order.tokens": ("most tokens", "token 最多"),
    "tr.order.duration": ("slowest", "耗时最长"),
    "tr.filter.min_cost": ("Costing at least", "花费不少于"),
    "tr.row": (
        "{started} · {reason} · {tokens} {tokens|token|tokens} · {cost}",
        "{started} · {reason} · {tokens} 个 token · {cost}",
    ),
    "tr.badge_partial": ("partial", "不完整"),
    "tr.badge_full": ("full diagnostics", "完整诊断"),
    # the head of one trace
    "tr.headline": (
        "Asked {started} · {status} · {reason}",
        "提问于 {started} · {status} · {reason}",
    ),
    "tr.partial": (
        "This trace is partial: {dropped} {dropped|record was|records were} lost on the way to "
        "the store, so some steps may be missing below.",
        "此追踪不完整:有 {dropped} 条记录在写入时丢失,下面可能缺少部分步骤。",
    ),
    "tr.total.time": ("Time", "耗时"),
    "tr.total.model_calls": ("Model calls", "模型调用"),
    "tr.total.tool_calls": ("Tool calls", "工具调用"),
    "tr.total.refused": (" ({n} refused before running)", "(另有 {n} 次在执行前被拒绝)"),
    "tr.total.chat_tokens": ("Chat tokens", "对话 token"),
    "tr.total.chat_tokens_value": (
        "{total} ({input} in, {cached} of them from cache; {output} out)",
        "{total}(输入 {input},其中缓存命中 {cached};输出 {output})",
    ),
    "tr.total.embedding_tokens": ("Embedding tokens (counted apart)", "向量化 token(单独计算)"),
    "tr.total.cost": ("Cost", "花费"),
    "tr.total.snapshot": ("Knowledge base snapshot", "知识库快照"),
    "tr.total.bundle": ("Prompt bundle", "提示词版本"),
    "tr.total.model": ("Model", "模型"),
    "tr.total.mode": ("Recorded", "记录方式"),
    "tr.snapshot_status.ready": ("complete", "完整"),
    "tr.snapshot_status.ready_partial": (
        "incomplete: some documents failed to import",
        "不完整:部分文档导入失败",
    ),
    "tr.mode.metadata": ("metadata only", "仅元数据"),
    "tr.mode.full": ("full diagnostics", "完整诊断"),
    "tr.full_switch": (
        "Record full diagnostics for the next questions",
        "为接下来的提问记录完整诊断",
    ),
    "tr.full_on": (
        "On: the next questions keep what the model saw, its words and the answer, on this "
        "computer only.",
        "已开启:接下来的提问会保存模型看到的内容、它的原话和回答,只保存在本机。",
    ),
    "tr.full_off": (
        "Off: the next questions keep figures and names only, not the texts.",
        "已关闭:接下来的提问只保存数字和名称,不保存文字内容。",
    ),
    "tr.mode_env": (
        "An environment variable sets this, so it cannot be changed here.",
        "此项由环境变量设定,无法在这里修改。",
    ),
    "tr.bundle": ("Download the diagnostic bundle", "下载诊断包"),
    "tr.bundle_ready": (
        "{name} is downloading; it holds no key.",
        "正在下载 {name};其中不含任何密钥。",
    ),
    # statuses and reasons
    "tr.status.ok": ("answered", "已回答"),
    "tr.status.error": ("failed", "失败"),
    "tr.status.running": ("still running", "进行中"),
    "tr.status.unset": ("no status", "无状态"),
    "tr.span_status.ok": ("done", "完成"),
    "tr.span_status.error": ("failed", "失败"),
    "tr.span_status.unset": ("no status", "无状态"),
    "tr.reason.finished": ("finished", "正常结束"),
    "tr.reason.clarification": ("asked for clarification", "请求澄清"),
    "tr.reason.budget": ("budget used up", "预算用尽"),
    "tr.reason.tool_call_limit": ("tool call limit", "达到工具调用上限"),
    "tr.reason.protocol_error": ("the model broke the protocol", "模型未遵守协议"),
    "tr.reason.model_error": ("the model service failed", "模型服务出错"),
    "tr.reason.cancelled": ("stopped", "已停止"),
    "tr.reason.internal_error": ("internal error", "内部错误"),
    "tr.reason.collection_unavailable": ("collection unavailable", "资料集不可用"),
    "tr.reason.tool_unavailable": ("that tool is not available", "该工具不可用"),
    "tr.reason.context_budget_exceeded": (
        "the result would not fit in the context",
        "结果放不进上下文",
    ),
    "tr.reason.request_budget_exceeded": (
        "the request's token budget is used up",
        "本次请求的 token 预算已用完",
    ),
    "tr.reason.harness_internal_error": ("internal error", "内部错误"),
    "tr.kind.request": ("Question", "提问"),
    "tr.kind.turn": ("Turn", "轮次"),
    "tr.kind.llm_call": ("Model call", "模型调用"),
    "tr.kind.tool_call": ("Tool call", "工具调用"),
    "tr.kind.admission": ("Budget check", "预算准入"),
    "tr.kind.final": ("Final answer", "最终回答"),
    "tr.kind.ingest": ("Import", "导入"),
    "tr.tool.search_blocks": ("search", "检索"),
    "tr.tool.list_blocks": ("read a section", "读取章节"),
    "tr.tool.scan_term": ("exact term scan", "字面扫描"),
    "tr.tool.get_outline": ("outline", "目录"),
    "tr.tool.list_documents": ("document list", "文档列表"),
    "tr.outcome.ok": ("found what it asked for", "找到了所需内容"),
    "tr.outcome.no_match": ("nothing matched", "没有匹配的内容"),
    "tr.outcome.scope_empty": ("the chosen scope holds nothing", "所选范围内没有内容"),
    "tr.outcome.collection_empty": ("the collection has no documents", "资料集里还没有文档"),
    "tr.outcome.invalid_argument": (
        "the arguments were not valid; the model was told to fix them",
        "参数无效;已告知模型修正",
    ),
    "tr.outcome.scope_not_found": (
        "the document or section it named does not exist",
        "它指定的文档或章节不存在",
    ),
    "tr.outcome.collection_unavailable": (
        "the knowledge base could not be opened",
        "知识库无法打开",
    ),
    "tr.outcome.upstream_unavailable": (
        "the embedding service did not answer",
        "向量化服务没有响应",
    ),
    "tr.outcome.tool_internal_error": (
        "the tool failed inside Citewise",
        "工具在 Citewise 内部出错",
    ),
    "tr.outcome.exception": ("the tool failed inside Citewise", "工具在 Citewise 内部出错"),
    "tr.outcome.unfinished": ("it never finished", "没有完成"),
    # the story
    "tr.story": ("How this answer came about", "这个回答是怎样形成的"),
    "tr.story_metadata": (
        "Recorded with metadata only: the model's own words are not kept, the steps, figures "
        "and sources are.",
        "本次只记录了元数据:没有保存模型的原话,但保存了步骤、数字和来源。",
    ),
    "tr.turn_title": ("Turn {n}", "第 {n} 轮"),
    "tr.turn_final": ("last turn, without tools", "最后一轮,不再调用工具"),
    "tr.protocol_errors": (
        "The model's reply broke the response format {n} {n|time|times}; it was asked again.",
        "模型的回复 {n} 次不符合格式要求,已要求它重新回答。",
    ),
    "tr.decided": ("The model thought: “{thought}”", "模型的想法:“{thought}”"),
    "tr.decided_unknown": (
        "The model decided what to do next (its words are kept only with full diagnostics).",
        "模型决定了下一步(只有开启完整诊断才会保存它的原话)。",
    ),
    "tr.model_failed": ("This model call failed: {code}.", "这次模型调用失败:{code}。"),
    "tr.attempt": ("attempt {n}", "第 {n} 次尝试"),
    "tr.model_usage": (
        "{input} tokens in ({cached} from cache) · {output} out · {cost} · {time}",
        "输入 {input} 个 token(缓存命中 {cached})· 输出 {output} · {cost} · {time}",
    ),
    "tr.do.search": ("Searched the documents for “{query}”", "在资料中检索“{query}”"),
    "tr.do.scan": ("Scanned for the exact term “{term}”", "逐字扫描词语“{term}”"),
    "tr.do.list_blocks": ("Read a section of {doc} in full", "完整读取 {doc} 的章节"),
    "tr.do.outline": ("Looked at the outline of the documents", "查看文档目录"),
    "tr.do.documents": ("Listed the documents", "列出文档"),
    "tr.do.other": ("Used {tool}", "调用了 {tool}"),
    "tr.do.in_docs": ("in {docs}", "范围:{docs}"),
    "tr.do.in_sections": ("sections {sections}", "章节:{sections}"),
    "tr.do.filter": ("{name} = {value}", "{name} = {value}"),
    "tr.returned": (
        "It returned {n} {n|block|blocks}:",
        "返回了 {n} 个文本块:",
    ),
    "tr.more_blocks": ("… and {n} more", "……另有 {n} 个"),
    "tr.refused_action": ("Not run: {why}.", "未执行:{why}。"),
    "tr.embedding_used": (
        "Embedding the query used {n} embedding tokens.",
        "查询向量化用了 {n} 个向量化 token。",
    ),
    "tr.admitted": (
        "Admitted into the context: {tokens} tokens; {left} left.",
        "已放入上下文:{tokens} 个 token;还剩 {left}。",
    ),
    "tr.refused": (
        "Refused: it needs {needed} tokens, the context allows {available} — raise the budget "
        "in Settings or narrow the question's scope.",
        "被拒绝:需要 {needed} 个 token,上下文只允许 {available}——请在“设置”中提高预算,"
        "或缩小问题的范围。",
    ),
    "tr.refused_request": (
        "Refused: the request would need {needed} tokens, only {available} are left of its "
        "budget — raise the request budget in Settings or ask a narrower question.",
        "被拒绝:本次请求需要 {needed} 个 token,预算只剩 {available}——请在“设置”中提高"
        "请求预算,或提一个范围更小的问题。",
    ),
    "tr.answer_title": ("The answer and its sources", "回答及其来源"),
    "tr.no_answer": ("No answer: {reason}.", "没有回答:{reason}。"),
    "tr.uncited": ("(no source: the model's own words)", "(无来源:模型自己的话)"),
    "tr.citation_invalid": (
        "a source it never retrieved",
        "引用了未检索到的来源",
    ),
    "tr.answer_unknown": (
        "The answer's text was not kept; it cited:",
        "回答原文没有保存;它引用了:",
    ),
    "tr.no_citations": ("The answer cites no source.", "回答没有引用任何来源。"),
    "tr.block_unknown": ("block {citation}", "文本块 {citation}"),
    "tr.page": ("p. {n}", "第 {n} 页"),
    "tr.pages": ("pp. {start}–{end}", "第 {start}–{end} 页"),
    # the timeline
    "tr.timeline": ("Timeline", "时间线"),
    "tr.timeline_hint": (
        "Each bar is one step, placed where it ran; open one for its raw attributes.",
        "每条横条是一个步骤,位置对应它运行的时间;展开可查看原始属性。",
    ),
    "tr.offset": ("started {ms} ms after the question", "在提问后 {ms} 毫秒开始"),
    # evidence and retrieval replay
    "tr.evidence": ("Evidence replay", "证据重放"),
    "tr.retrieval": ("Retrieval replay", "检索重放"),
    "tr.evidence_metadata": (
        "What the model saw was not kept for this question: it was recorded with metadata "
        "only. Switch on full diagnostics below and ask again to see it next time.",
        "这次提问没有保存模型看到的内容:记录时只保存了元数据。"
        "请打开下面的完整诊断,再提问一次,下次就能看到。",
    ),
    "tr.evidence_intro": (
        "Exactly what the model received in each call, checked against what was sent.",
        "模型在每次调用中收到的原样内容,已与当时发送的内容核对。",
    ),
    "tr.evidence_problem": (
        "Part of what the model saw could not be rebuilt (removed or damaged).",
        "模型看到的部分内容无法重建(已被清理或损坏)。",
    ),
    "tr.model_input": (
        "What the model saw: turn {turn}, attempt {attempt}",
        "模型输入:第 {turn} 轮,第 {attempt} 次",
    ),
    "tr.msg.system": ("Instructions (click to open)", "系统指令(点击展开)"),
    "tr.msg.user": ("The question", "提问"),
    "tr.msg.model": ("The model", "模型"),
    "tr.msg.observation": ("What the {tool} tool returned", "“{tool}”工具返回的内容"),
    "tr.msg.answer": ("The final answer", "最终回答"),
    "tr.retrieval_gone": (
        "Retrieval cannot be replayed: the snapshot {snapshot} this request used has been "
        "removed by clean-up.",
        "无法重放检索:本次请求使用的快照 {snapshot} 已被清理。",
    ),
    "tr.retrieval_none": (
        "This request looked nothing up, so there is nothing to replay.",
        "本次请求没有查找资料,因此没有可重放的内容。",
    ),
    "tr.retrieval_same": (
        "All {n} {n|lookup|lookups} found the same passages in the same order again.",
        "全部 {n} 次查找再次得到了相同顺序的相同段落。",
    ),
    "tr.retrieval_changed": (
        "{changed} of {n} {n|lookup|lookups} found different passages or a different order now.",
        "{n} 次查找中有 {changed} 次现在得到了不同的段落或顺序。",
    ),
    "tr.same": ("same blocks, same order", "块与顺序相同"),
    "tr.differs": ("different", "有差异"),
    "tr.diff": (
        "Call {call} ({tool}): {verdict}; {added} added, {removed} removed",
        "第 {call} 次调用({tool}):{verdict};新增 {added},移除 {removed}",
    ),
    "tr.then": ("Then", "当时"),
    "tr.now": ("Now", "现在"),
    "tr.outcome_changed": ("Outcome then: {then}; now: {now}.", "当时的结果:{then};现在:{now}。"),
    # re-run
    "tr.rerun": ("Run it again", "重新运行"),
    "tr.rerun_intro": (
        "The same question on the same snapshot with the same budgets; a model answers a bit "
        "differently each time, so several runs show how stable this answer is.",
        "在同一快照上、用同样的预算再问同一个问题;模型每次的回答会略有不同,多运行几次可以看出这个回答有多稳定。",
    ),
    "tr.rerun_impossible": ("Only a question can be run again.", "只有提问可以重新运行。"),
    "tr.rerun_runs": ("Runs", "次数"),
    "tr.rerun_start": ("Start the re-runs", "开始重新运行"),
    "tr.rerun_estimate": (
        "{runs} {runs|run|runs} of about {calls} model {calls|call|calls} each: about {tokens} "
        "tokens, about {cost} (from what this question used).",
        "{runs} 次,每次约 {calls} 次模型调用:约 {tokens} 个 token,约 {cost}"
        "(按本次提问的用量估算)。",
    ),
    "tr.rerun_running": ("Run {i} of {n} done…", "已完成 {i}/{n} 次……"),
    "tr.rerun_result": (
        "{passed} of {runs} {runs|run|runs} passed ({rate}%).",
        "{runs} 次中通过 {passed} 次({rate}%)。",
    ),
    "tr.rerun_original_passed": (
        "The original passed; {flipped} {flipped|run|runs} came out differently.",
        "原始回答通过;有 {flipped} 次结果不同。",
    ),
    "tr.rerun_original_failed": (
        "The original did not pass; {flipped} {flipped|run|runs} came out differently.",
        "原始回答未通过;有 {flipped} 次结果不同。",
    ),
    "tr.rerun_failures": ("What went wrong: {kinds}", "失败原因:{kinds}"),
    "tr.rerun_distinct": (
        "{n} different {n|answer|answers} among the runs.",
        "各次运行共得到 {n} 种不同的回答。",
    ),
    "tr.rerun_config_changed": (
        "The configuration has changed since the original ran, so differences may come from "
        "that (see details).",
        "自原始运行以来配置已改变,差异可能由此产生(见详情)。",
    ),
    "tr.fail.invalid_citations": (
        "cited a block it never retrieved",
        "引用了未检索到的文本块",
    ),
    "tr.run_passed": ("passed", "通过"),
    "tr.run_failed": ("did not pass", "未通过"),
    "tr.run_line": (
        "Run {i}: {verdict} · {tokens} tokens · {cost}",
        "第 {i} 次:{verdict} · {tokens} 个 token · {cost}",
    ),
    "tr.run_open": ("Open its trace", "打开它的追踪"),
    "tr.run_compare": ("Compare with the original", "与原始运行比较"),
    "tr.citations_changed": (
        "Sources changed: added {added}; dropped {removed}.",
        "来源有变化:新增 {added};去掉 {removed}。",
    ),
    "tr.answer_same": ("Same answer, same sources.", "回答和来源都相同。"),
    "tr.answer_original": ("The original answer", "原始回答"),
    "tr.answer_this_run": (
        "This run (green: added, red: removed)",
        "本次运行(绿色:新增,红色:删去)",
    ),
    "tr.answer_not_kept": (
        "(not kept: recorded with metadata only)",
        "(未保存:只记录了元数据)",
    ),
    "tr.answer_none": ("(no answer)", "(没有回答)"),
    # comparison
    "tr.compare": ("Compare with another trace", "与另一个追踪比较"),
    "tr.compare_intro": (
        "For example the same question under another prompt bundle or snapshot; ★ marks the "
        "same question.",
        "例如同一个问题在另一个提示词版本或快照下的运行;★ 表示相同的问题。",
    ),
    "tr.compare_with": ("Trace to compare with", "要比较的追踪"),
    "tr.compare_go": ("Compare", "比较"),
    "tr.compare_none": ("There is no other trace yet.", "还没有其他追踪。"),
    "tr.compare_title": (
        "Trace {first} beside trace {second}",
        "追踪 {first} 与追踪 {second} 对比",
    ),
    "tr.compare_other_question": (
        "These are two different questions.",
        "这是两个不同的问题。",
    ),
    "tr.compare_config_same": (
        "Same configuration: same versions, models, snapshot and budgets.",
        "配置相同:版本、模型、快照和预算都一样。",
    ),
    "tr.compare_config": (
        "The configuration differs in these settings:",
        "以下配置项不同:",
    ),
    "tr.compare_setting": ("Setting", "配置项"),
    "tr.compare_first": ("First trace", "第一个追踪"),
    "tr.compare_second": ("Second trace", "第二个追踪"),
    "tr.compare_calls": ("Tool calls, in order", "工具调用(按顺序)"),
    "tr.compare_call_blocks": ("{n} {n|block|blocks} returned", "返回 {n} 个文本块"),
    "tr.compare_no_calls": ("Neither looked anything up.", "两者都没有查找资料。"),
    "tr.compare_blocks": (
        "Blocks retrieved: {first} and {second}",
        "检索到的文本块:{first} 个与 {second} 个",
    ),
    "tr.compare_only_first": ("Only in the first: {blocks}", "只在第一个中:{blocks}"),
    "tr.compare_only_second": ("Only in the second: {blocks}", "只在第二个中:{blocks}"),
    "tr.compare_answer_same": ("The answers are the same.", "两个回答相同。"),
    "tr.compare_answer_differs": ("The answers differ.", "两个回答不同。"),
    "tr.compare_answer_unknown": (
        "Whether the answers differ is not known (one was not kept).",
        "无法判断回答是否不同(其中一个没有保存)。",
    ),
}
