"""The first-run wizard: language → DeepSeek key and its test → embeddings (built-in model, or
an OpenAI-compatible endpoint with its key and test) → first documents → first question.

A step that needs a working connection cannot be passed until its test succeeds; every failure
says what is wrong. The wizard never stores a key anywhere but through the App.
"""

from __future__ import annotations

from urllib.parse import urlencode

from nicegui import ui

from actors import App
from web.ask_page import hand_over
from web.i18n import LANGUAGES
from web.import_panel import ImportPanel
from web.key_field import KeyField, check_text
from web.shell import error_sentence, frame, show_error, texts

STEPS = ("language", "chat", "embedding", "documents", "ask")


def build(app: App, step: str | None = None) -> None:
    t = texts(app)
    frame(app, t, "/wizard")
    start = step if step in STEPS else STEPS[0]
    with ui.column().classes("w-full max-w-3xl mx-auto gap-2"):
        with ui.row().classes("w-full items-center"):
            ui.label(t("wiz.title")).classes("text-xl font-semibold")
            ui.space()

            def skip() -> None:
                app.mark_first_run_done()
                ui.navigate.to("/library")

            ui.button(t("wiz.skip"), on_click=skip).props("flat no-caps").mark("wizard-skip")
        ui.label(t("wiz.intro")).classes("text-sm")
        with ui.stepper(value=start).props("vertical").classes("w-full").mark("wizard") as stepper:
            with ui.step("language", title=t("wiz.step.language")):
                language = (
                    ui.radio(dict(LANGUAGES), value=app.config.ui.language)
                    .props("inline")
                    .mark("wizard-language")
                )

                async def language_next() -> None:
                    if language.value != app.config.ui.language:
                        try:
                            await app.save_settings({"ui": {"language": language.value}})
                        except Exception as exc:  # shown to the person
                            show_error(t, exc)
                            return
                        ui.navigate.to("/wizard?" + urlencode({"step": "chat"}))
                        return
                    stepper.next()

                with ui.stepper_navigation():
                    ui.button(t("wiz.next"), on_click=language_next).mark("wizard-next-language")

            with ui.step("chat", title=t("wiz.step.chat")):
                stored = "wiz.chat_help" if app.keyring_available() else "wiz.chat_help_session"
                ui.label(t(stored)).classes("text-sm").mark("wizard-chat-help")
                chat_key = KeyField(app, t, "deepseek")
                chat_note = ui.label().classes("text-sm text-red-700")

                async def chat_next() -> None:
                    check = await chat_key.test()
                    if check is not None and check.ok:
                        stepper.next()
                    else:
                        chat_note.set_text(t("wiz.need_ok"))

                with ui.stepper_navigation():
                    ui.button(t("wiz.test_and_next"), on_click=chat_next).mark("wizard-next-chat")
                    ui.button(t("wiz.back"), on_click=stepper.previous).props("flat")
                    # No key yet: the documents can still be added and looked up without one.
                    ui.button(t("wiz.without_key"), on_click=stepper.next).props(
                        "flat no-caps"
                    ).mark("wizard-without-key")

            with ui.step("embedding", title=t("wiz.step.embedding")):
                ui.label(t("wiz.embedding_help")).classes("text-sm")
                e = app.config.embedding
                provider = ui.radio(
                    {v: t(f"set.provider.{v}") for v in ("local", "openai_compatible")},
                    value=e.provider,
                ).mark("wizard-provider")
                with ui.column().classes("w-full") as remote:
                    base_url = ui.input(t("set.base_url"), value=e.base_url).classes("w-full")
                    model = ui.input(t("set.model"), value=e.model).classes("w-full")
                    dimensions = ui.number(t("set.dimensions"), value=e.dimensions)
                    embedding_key = KeyField(app, t, "embedding")
                remote.bind_visibility_from(provider, "value", value="openai_compatible")
                embedding_note = ui.label().classes("text-sm").mark("wizard-embedding-message")

                async def embedding_next() -> None:
                    changes: dict[str, object] = {"provider": provider.value}
                    if provider.value == "openai_compatible":
                        changes |= {
                            "base_url": base_url.value,
                            "model": model.value,
                            "dimensions": int(dimensions.value or 0),
                        }
                        if (embedding_key.value.value or "").strip() and not embedding_key.save():
                            return
                    try:
                        await app.save_settings({"embedding": changes})
                    except Exception as exc:  # a validation error names the key
                        embedding_note.set_text(error_sentence(t, exc))
                        return
                    embedding_note.set_text(t("set.key.testing"))
                    check = await app.test_key("embedding")
                    embedding_note.set_text(check_text(t, check))
                    if check.ok:
                        stepper.next()

                with ui.stepper_navigation():
                    ui.button(t("wiz.test_and_next"), on_click=embedding_next).mark(
                        "wizard-next-embedding"
                    )
                    ui.button(t("wiz.back"), on_click=stepper.previous).props("flat")

            with ui.step("documents", title=t("wiz.step.documents")):
                ui.label(t("wiz.documents_help")).classes("text-sm")
                ImportPanel(app, t, on_finished=lambda: None)
                documents_note = ui.label().classes("text-sm text-red-700")

                def documents_next() -> None:
                    job = app.current_import
                    running = job is not None and not job.finished.is_set()
                    if running or app.status().active_snapshot is None:
                        documents_note.set_text(t("wiz.wait_import"))
                        return
                    documents_note.set_text("")
                    stepper.next()

                with ui.stepper_navigation():
                    ui.button(t("wiz.next"), on_click=documents_next).mark("wizard-next-documents")
                    ui.button(t("wiz.back"), on_click=stepper.previous).props("flat")

            with ui.step("ask", title=t("wiz.step.ask")):
                ui.label(t("wiz.ask_help")).classes("text-sm")
                question = (
                    ui.input(placeholder=t("ask.placeholder"))
                    .classes("w-full")
                    .mark("wizard-question")
                )

                def finish() -> None:
                    text = (question.value or "").strip()
                    if not text:
                        ui.notify(t("ask.empty_question"))
                        return
                    app.mark_first_run_done()
                    hand_over(app, text)  # asked once by the ask page, not kept in its address
                    ui.navigate.to("/")

                question.on("keydown.enter", finish)
                with ui.stepper_navigation():
                    ui.button(t("wiz.finish"), icon="send", on_click=finish).mark("wizard-finish")
                    ui.button(t("wiz.back"), on_click=stepper.previous).props("flat")
