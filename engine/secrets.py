"""API keys: the OS credential store first, then the two reserved environment variables.

Keys are never written to config, logs, traces or bundles. Where no credential store exists
(headless Linux), `keyring_available()` says so and the environment is the only source.
"""

from __future__ import annotations

import os
from typing import Literal

from engine import redaction

# Still imported from here by actors/app.py and cli/ask.py.
from engine.errors import SecretStoreUnavailable as SecretStoreUnavailable
from engine.errors import SecretTooLong

SERVICE = "citewise"
KeyName = Literal["deepseek", "embedding"]
ENV_NAMES: dict[KeyName, str] = {
    "deepseek": "CITEWISE_DEEPSEEK_API_KEY",
    "embedding": "CITEWISE_EMBEDDING_API_KEY",
}


MAX_SECRET_BYTES = 2560  # CRED_MAX_CREDENTIAL_BLOB_SIZE; keyring stores text as UTF-16-LE


def keyring_available() -> bool:
    import keyring.errors  # on first use: keyring costs ~35 ms, and `status` needs no key

    try:
        backend = keyring.get_keyring()
    except keyring.errors.KeyringError:
        return False
    priority = getattr(backend, "priority", 0)
    return bool(priority and priority > 0)


def get_key(name: KeyName) -> str | None:
    """The stored key, or the environment variable when the store has none."""
    import keyring.errors

    try:
        value = keyring.get_password(SERVICE, name)
    except keyring.errors.KeyringError:
        value = None
    value = value or os.environ.get(ENV_NAMES[name]) or None
    redaction.remember(value)  # whatever this process knows is scrubbed from its logs
    return value


def set_key(name: KeyName, value: str) -> None:
    """Store a key; refused before writing when Windows' credential store could not hold it."""
    size = len(value.encode("utf-16-le"))  # how Credential Manager stores the secret
    if size > MAX_SECRET_BYTES:
        raise SecretTooLong(
            f"this key is {size} bytes as stored, more than the {MAX_SECRET_BYTES} bytes the "
            "system credential store holds, so it was not saved; check that you pasted only the "
            "key (no extra text), or set it in the environment variable "
            f"{ENV_NAMES[name]} instead"
        )
    redaction.remember(value)
    import keyring.errors

    try:
        keyring.set_password(SERVICE, name, value)
    except keyring.errors.KeyringError:
        raise SecretStoreUnavailable(
            "this system has no credential store for Citewise to keep the key in; set the "
            f"environment variable {ENV_NAMES[name]} instead"
        ) from None


def mask(value: str | None) -> str:
    """A key as it may be shown back: never in full."""
    if not value:
        return "(not set)"
    return f"…{value[-4:]}" if len(value) > 12 else "(set)"
