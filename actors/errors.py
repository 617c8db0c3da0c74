"""Every exception actors/ raises on purpose, in one flat module with domain names.

Each is an engine.errors.UserError: the message says what happened and what to do, the class
says the CLI exit code and the key of the UI's translated text. Errors of the layers below
(SnapshotError, OSError, msgspec) are translated where they enter, in the actor that met them.
"""

from __future__ import annotations

from typing import Literal

from engine.errors import EXIT_FAILURE, EXIT_USAGE, UserError


class AppError(UserError):
    """A command of the App that cannot be carried out; the message says what to do.

    `code` names the situation (import_running, no_collection…) so that the UI can say it in
    its own words (the sentence `error.app.<code>`), filled from the `facts` given here.
    """

    exit_code = EXIT_USAGE
    message_key = "error.app"

    def __init__(self, message: str, *, code: str = "", **facts: object) -> None:
        super().__init__(message)
        self.code = code
        for name, value in facts.items():
            setattr(self, name, value)


class CatalogError(UserError):
    """A catalog operation that cannot be done; the message says why and what to do."""

    exit_code = EXIT_USAGE
    message_key = "error.catalog"


class SnapshotDamaged(CatalogError):
    """A snapshot that cannot be opened: its manifest.json cannot be read or decoded, or a
    file it lists is missing or cut short.

    Never read as "no snapshot": the message names the file and says how to repair it.
    """

    message_key = "error.snapshot_damaged"

    def __init__(self, collection: str, snapshot_id: str, problem: str, active: bool) -> None:
        self.collection = collection
        self.snapshot_id = snapshot_id
        self.problem = problem
        self.active = active
        which = "the active snapshot" if active else "snapshot"
        super().__init__(
            f"{which} {snapshot_id} of collection {collection!r} is damaged ({problem}); "
            "activate an earlier one (`citewise snapshots list`, then "
            "`citewise snapshots activate ID`), or, if none is listed, delete the collection "
            f"(`citewise collections delete {collection} --yes`) and import the documents again"
        )

    def __reduce__(self) -> tuple[type[SnapshotDamaged], tuple[str, str, str, bool]]:
        return (type(self), (self.collection, self.snapshot_id, self.problem, self.active))


class ConversationError(UserError):
    """An unknown or malformed conversation id; the message says what to use."""

    exit_code = EXIT_USAGE
    message_key = "error.conversation_unknown"


class DocumentEditError(UserError):
    """A document edit that cannot be made; the message says what to do."""

    exit_code = EXIT_USAGE
    message_key = "error.document_edit"


class OverrideError(UserError, ValueError):
    """An edit that cannot be kept; the message says what is allowed."""

    exit_code = EXIT_USAGE
    message_key = "error.override_invalid"


class UpgradeRequired(UserError):
    """The data was written by an older Citewise; the message says to run the upgrade."""

    exit_code = EXIT_USAGE
    message_key = "error.upgrade_required"


Period = Literal["day", "month"]


class SpendingCapReached(AppError):
    """A new request would start past a spending cap. Carries the figures for the UI text."""

    exit_code = EXIT_FAILURE  # the request was refused: a failure, not a usage error
    message_key = "spend.cap_reached"

    def __init__(self, period: Period, spent: float, cap: float, currency: str) -> None:
        self.period = period
        self.spent = spent
        self.cap = cap
        self.currency = currency
        when, key = ("today", "daily_cap") if period == "day" else ("this month", "monthly_cap")
        super().__init__(
            f"the {'daily' if period == 'day' else 'monthly'} spending cap is reached: "
            f"{spent:.4f} {currency} spent {when}, cap {cap:g} {currency}. No request was sent. "
            f"Raise or clear chat.{key} in Settings (or config.toml), or wait until "
            f"{'tomorrow' if period == 'day' else 'next month'}"
        )
