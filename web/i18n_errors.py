"""The UI's sentences for errors and connectivity-test verdicts, in English and Chinese; part of
the one table in web/i18n.py (merged there), kept apart because it grows with every error.

Keys: each UserError's `message_key`, refined by `.{code}` and `.{code}.{cause}` for provider
errors (web/error_view.py picks the most specific one that exists); `check.{code}` for a
KeyCheck. Each sentence says what happened and one thing to do, in a person's words: never a
config key, an environment variable, an exception name or a command (those go under details).
Placeholders name attributes the error (or the KeyCheck's facts) carries.
"""

from __future__ import annotations

ERROR_TEXTS: dict[str, tuple[str, str]] = {
    # how an error is shown
    "error.details": ("Details", "详情"),
    "error.close": ("Close", "关闭"),
    "error.open_settings": ("Open settings", "打开设置"),
    "error.open_library": ("Open the library", "打开资料库"),
    "error.retry": ("Retry", "重试"),
    "error.bug": (
        "Something went wrong inside Citewise: this is a bug, not something you did. Try "
        "again; if it happens again, copy the details below into a bug report.",
        "Citewise 内部出错:这是程序缺陷,不是你的操作问题。请重试;如果再次出现,"
        "请把下方详情复制到问题报告中。",
    ),
    # engine/errors.py
    "error.failed": (
        "That did not work. Try again; the details below say more.",
        "操作没有成功。请重试;下方详情中有更多信息。",
    ),
    "error.config_invalid": (
        "A setting has a value Citewise cannot use, so nothing was saved. Correct it in "
        "Settings and save again.",
        "有一项设置的值无法使用,因此没有保存。请在“设置”中改正后再保存。",
    ),
    "error.collection_name_invalid": (
        "That name cannot be used for a collection: it must also work as a folder name on "
        "every computer. Choose another name.",
        "这个名称不能用作资料集名称:它必须能在任何电脑上用作文件夹名。请换一个名称。",
    ),
    "error.data_path_too_long": (
        "The library folder is too deep inside other folders for Windows, which by default "
        "allows paths of at most 260 characters. Nothing was changed. Choose a shorter name, "
        "or move the library to a folder nearer the top of the drive.",
        "资料库所在的文件夹层级太深:Windows 默认只允许不超过 260 个字符的路径。没有做任何更改。"
        "请换一个更短的名称,或把资料库移到更靠近磁盘根目录的文件夹。",
    ),
    "error.writer_busy": (
        "Another Citewise window or command is changing this library right now. Wait until "
        "it has finished, then try again.",
        "另一个 Citewise 窗口或命令正在修改此资料库。请等它完成后再试。",
    ),
    "error.secret_store_unavailable": (
        "This computer has no credential store, so a key cannot be kept after Citewise "
        "closes. Paste the key again next time (the details say how to keep it for good).",
        "此电脑没有凭据库,Citewise 关闭后无法保留 Key。下次请重新粘贴(详情中说明了如何长期保存)。",
    ),
    "error.secret_too_long": (
        "This is too long to be an API key. Copy the key again from the vendor's website, "
        "without any other text.",
        "这段内容太长,不像 API Key。请从服务商网站重新复制 Key,不要带其他文字。",
    ),
    "error.ca_bundle_invalid": (
        "The certificate file in the network settings cannot be read. Choose another file in "
        "Settings, or clear the field to use the system's certificates.",
        "网络设置中的证书文件无法读取。请在“设置”中换一个文件,或清空该项以使用系统证书。",
    ),
    "error.provider_failed": (
        "The model service did not answer as expected. Try again in a moment.",
        "模型服务没有正常回应。请稍后重试。",
    ),
    "error.chat_failed": (
        "The chat model could not answer. Try again in a moment.",
        "对话模型无法回答。请稍后重试。",
    ),
    "error.chat_failed.unauthorized": (
        "The chat service refused the API key. Paste the key again in Settings and test it.",
        "对话服务拒绝了 API Key。请在“设置”中重新粘贴 Key 并测试。",
    ),
    "error.chat_failed.no_balance": (
        "The chat service says your account has no balance left. Top up the account on the "
        "vendor's website, then ask again.",
        "对话服务提示账户余额不足。请在服务商网站充值后再提问。",
    ),
    "error.chat_failed.rate_limited": (
        "The chat service is receiving too many requests right now. Wait a moment and try again.",
        "对话服务当前请求过多。请稍等片刻后重试。",
    ),
    "error.chat_failed.server_error": (
        "The chat service has a problem on its side; this is usually temporary. Try again in "
        "a moment.",
        "对话服务自身出现问题,通常是暂时的。请稍后重试。",
    ),
    "error.chat_failed.timeout": (
        "The chat service did not answer in time. Check your internet connection, then try again.",
        "对话服务没有及时回应。请检查网络连接后重试。",
    ),
    "error.chat_failed.connection": (
        "Citewise could not reach the chat service. Check your internet connection and the "
        "chat address in Settings.",
        "Citewise 无法连接对话服务。请检查网络连接以及“设置”中的对话服务地址。",
    ),
    "error.chat_failed.connection.tls": (
        "The secure connection to the chat service failed: its certificate is not trusted. "
        "If your network uses its own certificates, choose their file in Settings.",
        "与对话服务的安全连接失败:其证书不受信任。如果你的网络使用自己的证书,请在“设置”中选择证书文件。",
    ),
    "error.chat_failed.bad_request": (
        "The chat service rejected the request; usually the address or the model name in "
        "Settings is wrong. Check both in Settings.",
        "对话服务拒绝了请求,通常是“设置”中的地址或模型名称有误。请在“设置”中检查这两项。",
    ),
    "error.chat_failed.bad_request.not_json": (
        "The chat address in Settings leads to a website, not to a chat service. Correct the "
        "address in Settings.",
        "“设置”中的对话服务地址指向的是一个网站,而不是对话服务。请在“设置”中改正地址。",
    ),
    "error.chat_failed.bad_response": (
        "The chat service sent an answer Citewise cannot read. Check in Settings that the "
        "address is an OpenAI-compatible service.",
        "对话服务返回了 Citewise 无法读取的内容。请在“设置”中确认地址是 OpenAI 兼容的服务。",
    ),
    "error.chat_failed.cancelled": (
        "The request was cancelled. Ask again when you are ready.",
        "请求已取消。准备好后可以重新提问。",
    ),
    "error.embedding_failed": (
        "The embedding service could not turn the text into vectors. Try again in a moment.",
        "向量服务无法处理这些文字。请稍后重试。",
    ),
    "error.embedding_failed.unauthorized": (
        "The embedding service refused the API key. Paste the embedding key again in "
        "Settings and test it.",
        "向量服务拒绝了 API Key。请在“设置”中重新粘贴向量接口 Key 并测试。",
    ),
    "error.embedding_failed.no_balance": (
        "The embedding service says your account has no balance left. Top up the account, or "
        "choose the built-in model in Settings.",
        "向量服务提示账户余额不足。请充值,或在“设置”中改用内置模型。",
    ),
    "error.embedding_failed.quota": (
        "The quota of the embedding key is used up. Check its plan with the vendor, or choose "
        "the built-in model in Settings.",
        "向量接口 Key 的额度已用完。请向服务商确认套餐,或在“设置”中改用内置模型。",
    ),
    "error.embedding_failed.rate_limited": (
        "The embedding service is receiving too many requests right now. Wait a moment and "
        "try again.",
        "向量服务当前请求过多。请稍等片刻后重试。",
    ),
    "error.embedding_failed.server_error": (
        "The embedding service has a problem on its side; this is usually temporary. Try "
        "again in a moment.",
        "向量服务自身出现问题,通常是暂时的。请稍后重试。",
    ),
    "error.embedding_failed.timeout": (
        "The embedding service did not answer in time. Check your internet connection, then "
        "try again.",
        "向量服务没有及时回应。请检查网络连接后重试。",
    ),
    "error.embedding_failed.connection": (
        "Citewise could not reach the embedding service. Check your internet connection and "
        "the embedding address in Settings.",
        "Citewise 无法连接向量服务。请检查网络连接以及“设置”中的向量服务地址。",
    ),
    "error.embedding_failed.connection.tls": (
        "The secure connection to the embedding service failed: its certificate is not "
        "trusted. If your network uses its own certificates, choose their file in Settings.",
        "与向量服务的安全连接失败:其证书不受信任。如果你的网络使用自己的证书,请在“设置”中选择证书文件。",
    ),
    "error.embedding_failed.bad_request": (
        "The embedding service rejected the request; usually the address or the model name "
        "in Settings is wrong. Check both in Settings.",
        "向量服务拒绝了请求,通常是“设置”中的地址或模型名称有误。请在“设置”中检查这两项。",
    ),
    "error.embedding_failed.bad_request.not_json": (
        "The embedding address in Settings leads to a website, not to an embedding service. "
        "Correct the address in Settings.",
        "“设置”中的向量服务地址指向的是一个网站,而不是向量服务。请在“设置”中改正地址。",
    ),
    "error.embedding_failed.bad_response": (
        "The embedding service sent an answer Citewise cannot read. Check in Settings that "
        "the address is an OpenAI-compatible service.",
        "向量服务返回了 Citewise 无法读取的内容。请在“设置”中确认地址是 OpenAI 兼容的服务。",
    ),
    "error.embedding_failed.wrong_dimension": (
        "The embedding model returns vectors of another size than the one set. Set the "
        "dimensions in Settings to the model's size.",
        "向量模型返回的向量维度与设置不符。请在“设置”中把维度改为该模型的维度。",
    ),
    "error.document_unreadable": (
        "This document could not be read. Check that it opens on your computer, then retry "
        "it on the Library page.",
        "无法读取此文档。请确认它能在你的电脑上打开,然后在“资料库”页重试。",
    ),
    "error.document_no_blocks": (
        "This document has no text Citewise can use (it may be empty, or only pictures). "
        "Add a version that contains text.",
        "此文档中没有可用的文字(可能是空的,或只有图片)。请添加包含文字的版本。",
    ),
    "error.prompt_bundle_invalid": (
        "A prompt bundle cannot be used: one of its files is damaged or incomplete. Choose "
        "another bundle in Settings.",
        "有一个提示词包无法使用:其中的文件损坏或不完整。请在“设置”中选择其他提示词包。",
    ),
    "error.gold_invalid": (
        "The evaluation file cannot be used: a line is not in the expected form. Fix the "
        "line named in the details.",
        "评测文件无法使用:有一行格式不对。请改正详情中指出的那一行。",
    ),
    "error.trace_store": (
        "The saved traces cannot be read right now. Reload this page; if it keeps "
        "happening, see the details.",
        "暂时无法读取已保存的追踪记录。请刷新本页;如果反复出现,请查看详情。",
    ),
    "error.trace_not_found": (
        "This trace no longer exists (it may have been cleaned up). Choose another request "
        "from the list.",
        "此追踪记录已不存在(可能已被清理)。请从列表中选择其他请求。",
    ),
    "error.trace_artifact_unavailable": (
        "This part of the trace was not kept: only full diagnostics keep prompts and "
        "evidence. Turn on full diagnostics in Settings for future questions.",
        "追踪的这一部分没有保存:只有完整诊断模式才保存提示词和证据。如需保存,请在“设置”中开启完整诊断。",
    ),
    "error.diagnostic_bundle": (
        "The diagnostic bundle could not be made safely, so none was written. Try again; "
        "the details say why.",
        "无法安全地生成诊断包,因此没有写入任何文件。请重试;详情中说明了原因。",
    ),
    "error.upgrade": (
        "Your data could not be upgraded; nothing was changed. Try again after reading the "
        "details.",
        "数据升级未完成,没有做任何改动。请查看详情后重试。",
    ),
    "error.upgrade_data_too_new": (
        "Your data was written by a newer version of Citewise; nothing was changed. Install "
        "that version (or a newer one) to open it.",
        "你的数据是由更新版本的 Citewise 写入的,没有做任何改动。请安装该版本(或更新的版本)来打开。",
    ),
    "error.upgrade_no_path": (
        "Your data comes from a version too old for this one to convert; nothing was changed. "
        "Upgrade through an intermediate version first.",
        "你的数据来自过旧的版本,此版本无法直接转换,没有做任何改动。请先通过一个中间版本升级。",
    ),
    "error.upgrade_stamp_damaged": (
        "The file that records your data's format is damaged. Restore a backup in Settings.",
        "记录数据格式的文件已损坏。请在“设置”中恢复一个备份。",
    ),
    "error.upgrade_failed": (
        "The upgrade stopped before it switched over: your data is unchanged and still in "
        "use. Try again; if it fails again, send the details.",
        "升级在切换前中止:你的数据没有改变,仍在使用中。请重试;如果再次失败,请发送详情。",
    ),
    "error.upgrade_unfinished": (
        "The upgrade was interrupted while moving the new files into place. Restart "
        "Citewise: it finishes the move when it starts.",
        "升级在移入新文件时被中断。请重新启动 Citewise:启动时会完成剩余步骤。",
    ),
    # actors/errors.py
    "error.app": (
        "Citewise could not do that. The details below say why and what to change.",
        "Citewise 无法完成此操作。下方详情说明了原因和需要修改的地方。",
    ),
    "error.app.empty_key": ("The key is empty: paste it, then save.", "Key 为空:请先粘贴,再保存。"),
    "error.app.no_collection": (
        "There is no collection named “{name}”. Create it on the Library page first.",
        "没有名为“{name}”的资料集。请先在“资料库”页新建。",
    ),
    "error.app.collection_exists": (
        "A collection named “{name}” already exists. Choose another name.",
        "已有名为“{name}”的资料集。请换一个名字。",
    ),
    "error.app.collection_case_twin": (
        "There is already a collection named “{existing}”, and Windows treats “{name}” as the "
        "same name (only upper and lower case differ). Choose another name.",
        "已有名为“{existing}”的资料集;“{name}”与它只有大小写不同,Windows 会把两者当作同一个名称。"
        "请换一个名字。",
    ),
    "error.app.collection_in_use": (
        "The collection “{name}” is in use right now: a question or an export is reading it, or "
        "another program (such as a virus scanner or a backup tool) has one of its files open. "
        "Nothing was changed. Wait a moment or close that program, then try again.",
        "资料集“{name}”正在使用中:有提问或导出正在读取它,或其他程序(例如杀毒软件、备份工具)"
        "打开了其中的文件。没有做任何更改。请稍等或关闭该程序后再试。",
    ),
    "error.app.import_running": (
        "An import is still running. Wait for it to finish, or pause or cancel it, then try again.",
        "还有导入正在进行。请等它完成,或暂停、取消后再试。",
    ),
    "error.app.import_interrupted": (
        "An interrupted import of “{collections}” will go on from this saved work, so it was "
        "not cleared. Resume it in the Library (Resume import), then clear.",
        "资料集“{collections}”有一次中断的导入要靠这些数据继续,所以没有清除。请先在资料库中"
        "点“继续导入”完成它,然后再清除。",
    ),
    "error.app.original_missing": (
        "The original file of {sources} has moved or is no longer known. Import it again by "
        "choosing the file.",
        "{sources} 的原文件已移动或无法找到。请重新选择该文件导入。",
    ),
    "error.app.bad_file_name": (
        "“{name}” cannot be used as a file name here. Rename the file, then add it again.",
        "“{name}”不能在这里用作文件名。请给文件改个名字后再添加。",
    ),
    "error.app.no_documents": (
        "This collection has no documents yet. Add some on the Library page first.",
        "这个资料集还没有文档。请先在“资料库”页添加。",
    ),
    "error.app.no_key": (
        "No DeepSeek API key is saved yet. Add it in Settings, then ask again.",
        "还没有保存 DeepSeek API Key。请在“设置”中添加后再提问。",
    ),
    "error.app.empty_question": (
        "The question is empty: type a question first.",
        "问题是空的:请先输入问题。",
    ),
    "error.app.question_not_text": (
        "The question holds characters that are not text (perhaps a broken paste). Retype it.",
        "问题中含有无法识别的字符(可能是粘贴出错)。请重新输入。",
    ),
    "error.app.no_conversation": (
        "That conversation no longer exists. Start a new one.",
        "该对话已不存在。请新建一个对话。",
    ),
    "error.app.nothing_to_export": (
        "There is no answer to download yet. Ask the question first.",
        "还没有可以下载的回答。请先提问。",
    ),
    "error.catalog": (
        "The library could not be changed as asked. The details below say why.",
        "无法按要求修改资料库。下方详情说明了原因。",
    ),
    "error.snapshot_damaged": (
        "A saved version of this collection is damaged. Go back to an earlier version in the "
        "snapshot history on the Library page.",
        "此资料集的一个已保存版本已损坏。请在“资料库”页的快照历史中回到较早的版本。",
    ),
    "error.conversation_unknown": (
        "That conversation no longer exists. Start a new conversation.",
        "该对话已不存在。请开始新对话。",
    ),
    "error.document_edit": (
        "The document could not be changed like that. Check the title and names, then save again.",
        "无法这样修改文档。请检查标题和名称后再保存。",
    ),
    "error.override_invalid": (
        "That edit cannot be kept (the details say what is allowed). Change it and save again.",
        "这项修改无法保存(详情中说明了允许的内容)。请修改后再保存。",
    ),
    "error.upgrade_required": (
        "Your data comes from an older version of Citewise and must be upgraded first. "
        "Restart Citewise to see the upgrade page.",
        "你的数据来自旧版本的 Citewise,需要先升级。请重新启动 Citewise 以打开升级页面。",
    ),
    "spend.cap_reached": (
        "A spending cap is reached ({spent:.4f} of {cap:g} {currency}), so nothing was sent. "
        "Raise or clear the cap in Settings, or wait until the period ends.",
        "已达到花费上限(已花 {spent:.4f},上限 {cap:g} {currency}),所以没有发送。"
        "请在“设置”中提高或取消上限,或等到下一个周期。",
    ),
    "spend.cap_reached.day": (
        "The daily spending cap is reached ({spent:.4f} of {cap:g} {currency} today), so "
        "nothing was sent. Raise or clear the daily cap in Settings, or ask again tomorrow.",
        "已达到每日花费上限(今天已花 {spent:.4f},上限 {cap:g} {currency}),所以没有发送。"
        "请在“设置”中提高或取消每日上限,或明天再问。",
    ),
    "spend.cap_reached.month": (
        "The monthly spending cap is reached ({spent:.4f} of {cap:g} {currency} this month), "
        "so nothing was sent. Raise or clear the monthly cap in Settings, or ask again next "
        "month.",
        "已达到每月花费上限(本月已花 {spent:.4f},上限 {cap:g} {currency}),所以没有发送。"
        "请在“设置”中提高或取消每月上限,或下个月再问。",
    ),
    # connectivity tests (engine/keycheck.py): facts host, model, models, seconds, status,
    # got, expected, and ms (how long the test took)
    "check.ok.deepseek": (
        "It works: {host} answered with the model {model} ({ms} ms).",
        "连接正常:{host} 使用模型 {model} 作答({ms} 毫秒)。",
    ),
    "check.ok.embedding": (
        "It works: the model {model} returned vectors of {expected} dimensions ({ms} ms).",
        "连接正常:模型 {model} 返回了 {expected} 维的向量({ms} 毫秒)。",
    ),
    "check.test_again": ("Test again", "重新测试"),
    "check.no_key": (
        "No key is saved yet. Paste the key above, then press Test.",
        "还没有保存 Key。请在上方粘贴 Key,然后点击“测试连接”。",
    ),
    "check.unauthorized": (
        "{host} refused this key (HTTP {status}): it is wrong, revoked or not allowed to use "
        "this model. Copy the key again from the vendor's website and paste it above.",
        "{host} 拒绝了这个 Key(HTTP {status}):Key 有误、已被撤销或无权使用该模型。"
        "请从服务商网站重新复制 Key 并粘贴到上方。",
    ),
    "check.no_balance": (
        "The key is valid, but the account at {host} has no balance left. Top up the account "
        "on the vendor's website, then test again.",
        "Key 有效,但 {host} 上的账户余额不足。请在服务商网站充值后重新测试。",
    ),
    "check.quota": (
        "The quota of this key at {host} is used up. Check the key's plan with the vendor, "
        "or choose the built-in embedding model.",
        "此 Key 在 {host} 的额度已用完。请向服务商确认套餐,或改用内置向量模型。",
    ),
    "check.rate_limited": (
        "{host} is limiting requests right now, so the key could not be tested. Wait a "
        "minute, then test again.",
        "{host} 正在限制请求频率,因此无法测试 Key。请等一分钟后重新测试。",
    ),
    "check.server_error": (
        "{host} has a problem on its side (HTTP {status}), so the key could not be tested. "
        "Test again in a few minutes.",
        "{host} 自身出现问题(HTTP {status}),因此无法测试 Key。请过几分钟后重新测试。",
    ),
    "check.timeout": (
        "{host} did not answer within {seconds} seconds. Check your internet connection (and "
        "the proxy, if you use one), then test again.",
        "{host} 在 {seconds} 秒内没有回应。请检查网络连接(如使用代理,也请检查代理),然后重新测试。",
    ),
    "check.unreachable": (
        "Nothing answers at {host}. Check the Base URL in the settings; DeepSeek's is "
        "https://api.deepseek.com.",
        "{host} 没有任何回应。请检查设置中的 Base URL;DeepSeek 的地址是 https://api.deepseek.com。",
    ),
    "check.unknown_host": (
        "The address {host} cannot be found. Check the spelling of the Base URL in the "
        "settings, and your internet connection.",
        "找不到地址 {host}。请检查设置中 Base URL 的拼写以及网络连接。",
    ),
    "check.proxy": (
        "The proxy could not connect to {host}. Check the proxy in the network settings, or "
        "clear it to use the system's.",
        "代理无法连接到 {host}。请检查网络设置中的代理,或清空该项以使用系统设置。",
    ),
    "check.tls": (
        "The secure connection to {host} failed: its certificate is not trusted. If your "
        "company or school uses its own certificates, choose their file in the network "
        "settings.",
        "与 {host} 的安全连接失败:其证书不受信任。如果你的公司或学校使用自己的证书,"
        "请在网络设置中选择证书文件。",
    ),
    "check.wrong_base_url": (
        "There is no API at this address ({host} answered “not found”). Check the Base URL in "
        "the settings; DeepSeek's is https://api.deepseek.com, other services usually end in "
        "/v1.",
        "此地址上没有接口({host} 回答“未找到”)。请检查设置中的 Base URL;DeepSeek 的地址是 "
        "https://api.deepseek.com,其他服务通常以 /v1 结尾。",
    ),
    "check.not_an_api": (
        "The address leads to {host}, which is a website or another kind of service, not an "
        "OpenAI-compatible API. Correct the Base URL in the settings; DeepSeek's is "
        "https://api.deepseek.com.",
        "该地址指向 {host},它是一个网站或其他服务,而不是 OpenAI 兼容接口。请改正设置中的 "
        "Base URL;DeepSeek 的地址是 https://api.deepseek.com。",
    ),
    "check.wrong_model": (
        "{host} does not offer the model {model}. Choose one it offers: {models}.",
        "{host} 不提供模型 {model}。请选择它提供的模型:{models}。",
    ),
    "check.wrong_dimension": (
        "The model returns vectors of {got} dimensions, but {expected} are set. Set the "
        "dimensions in the settings to {got}.",
        "该模型返回 {got} 维的向量,但设置的是 {expected} 维。请在设置中把维度改为 {got}。",
    ),
    "check.bad_request": (
        "{host} rejected the test request (HTTP {status}); usually the Base URL or the model "
        "name is wrong. Check both in the settings.",
        "{host} 拒绝了测试请求(HTTP {status}),通常是 Base URL 或模型名称有误。"
        "请在设置中检查这两项。",
    ),
    "check.bad_response": (
        "{host} answered in a way Citewise cannot read. Check that the Base URL in the "
        "settings points at an OpenAI-compatible API.",
        "{host} 的回应 Citewise 无法读取。请确认设置中的 Base URL 指向 OpenAI 兼容接口。",
    ),
    # a question that ended without an answer, by its termination reason (a model_error says
    # the chat error's own sentence, error.chat_failed.<code>, when its code is known)
    "ended.budget": (
        "The question used up its budget before an answer could be written. Ask a shorter "
        "question, or raise the budgets in Settings.",
        "这个问题在写出回答之前就用完了预算。请把问题问得短一些,或在“设置”中提高预算。",
    ),
    "ended.tool_call_limit": (
        "The model looked things up as often as allowed without finishing. Ask a narrower "
        "question, or raise the tool call limit in Settings.",
        "模型已达到允许的查找次数,仍未完成回答。请把问题问得更具体,或在“设置”中提高工具调用次数上限。",
    ),
    "ended.protocol_error": (
        "The model did not answer in the form Citewise expects. Ask again; if it keeps "
        "happening, report it with this answer's trace.",
        "模型没有按 Citewise 要求的格式作答。请重新提问;如果反复出现,请附上本次回答的追踪反馈。",
    ),
    "ended.model_error": (
        "The chat model could not answer. Try again in a moment.",
        "对话模型无法回答。请稍后重试。",
    ),
    "ended.cancelled": (
        "Stopped. No answer was recorded; ask again when you are ready.",
        "已停止。本次没有记录回答;准备好后可以重新提问。",
    ),
    "ended.internal_error": (
        "Something went wrong inside Citewise while answering: this is a bug. Ask again; if "
        "it happens again, report it with this answer's trace.",
        "Citewise 在回答时内部出错:这是程序缺陷。请重新提问;"
        "如果再次出现,请附上本次回答的追踪反馈。",
    ),
    "ended.collection_unavailable": (
        "This collection cannot be searched right now. Open the library to check it (the "
        "details say what is wrong).",
        "此资料集暂时无法检索。请打开资料库检查(详情中说明了问题)。",
    ),
    "ended.unknown": (
        "No answer was written. Ask again; the details say why.",
        "没有写出回答。请重新提问;详情中说明了原因。",
    ),
}
