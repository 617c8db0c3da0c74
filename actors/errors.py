"""Every exception actors/ raises on purpose, in one flat module with domain names.

Each is an engine.errors.UserError: the message says what happened and what to do, the class
says the CLI exit code and the key of the UI's translated text. Errors of the layers below
(SnapshotError, OSError, msgspec) are translated where they enter, in the actor that met them.
"""

from __future__ import annotations

from engine.errors import EXIT_USAGE, UserError


class CatalogError(UserError):
    """A catalog operation that cannot be done; the message says why and what to do."""

    exit_code = EXIT_USAGE
    message_key = "error.catalog"


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
