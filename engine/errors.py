"""Every exception engine/ raises on purpose, in one flat module with domain names.

`UserError` is the base of every error a person can act on: it carries the CLI exit code and
the key of the UI's translated sentence, while str(exc) stays the detailed English message.
`ProviderError` is the base of the chat and embedding clients' errors, and
`provider_code_for_status` the one reading of an HTTP status both use. Foreign errors (httpx,
OSError, keyring, filelock, msgspec) are translated where they enter, never raised through.
This module imports nothing of the project.
"""

from __future__ import annotations

from typing import ClassVar, Literal

# CLI exit codes (SPEC §12); 0 is success and never an error's.
EXIT_FAILURE = 1  # the command ran and failed
EXIT_USAGE = 2  # invalid usage, invalid settings or data, or a tool error
EXIT_PARTIAL = 3  # part of the work was done (e.g. some documents failed)


class UserError(Exception):
    """An error a person can act on; str(exc) says what happened and what to do, in English.

    `exit_code` is what the CLI exits with, `message_key` the key of the UI's translated text.
    """

    exit_code: ClassVar[int] = EXIT_FAILURE
    message_key: ClassVar[str] = "error.failed"


# -- settings, data directory, keys ------------------------------------------------------------
class ConfigError(UserError, ValueError):
    """An invalid setting, phrased for the person who wrote it."""

    exit_code = EXIT_USAGE
    message_key = "error.config_invalid"


class InvalidCollectionName(UserError, ValueError):
    """A collection name that cannot be a folder name on every OS; the message says why."""

    exit_code = EXIT_USAGE
    message_key = "error.collection_name_invalid"


class WriterBusy(UserError):
    """Another Citewise process is importing or changing this data directory."""

    exit_code = EXIT_USAGE
    message_key = "error.writer_busy"


class DataPathTooLong(UserError):
    """The data directory (or a collection name in it) is too deep for Windows paths of at
    most 260 characters; `length` is what the deepest path would need."""

    exit_code = EXIT_USAGE
    message_key = "error.data_path_too_long"

    def __init__(self, message: str, *, length: int) -> None:
        super().__init__(message)
        self.length = length


class SecretStoreUnavailable(UserError):
    """No OS credential store; the message says which environment variable to use instead."""

    message_key = "error.secret_store_unavailable"


class SecretTooLong(SecretStoreUnavailable):
    """A key larger than Windows Credential Manager's blob limit (refused on every OS)."""

    message_key = "error.secret_too_long"


class CaBundleError(UserError, ValueError):
    """The configured CA bundle cannot be read or parsed."""

    exit_code = EXIT_USAGE
    message_key = "error.ca_bundle_invalid"


# -- chat and embedding providers ----------------------------------------------------------------
ChatErrorCode = Literal[
    "unauthorized",  # 401/403: the key is wrong, revoked or lacks access
    "no_balance",  # 402: the account has no credit left
    "rate_limited",  # 429: too many requests for now
    "server_error",  # 5xx, or an error event in the middle of a stream
    "timeout",  # no answer (or no next chunk) within timeout_s
    "connection",  # refused, reset, DNS, TLS, proxy; a stream cut before [DONE]
    "bad_response",  # not JSON, no choices, malformed SSE
    "bad_request",  # another 4xx: wrong base URL or model, a request the vendor refused
    "cancelled",  # for callers that record a cancelled call as data; the client never raises it
]
CHAT_RETRYABLE_CODES: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "timeout", "connection", "bad_response"}
)

EmbeddingErrorCode = Literal[
    "unauthorized",  # 401/403: the key is wrong, revoked or lacks access
    "no_balance",  # 402: the account has no credit left
    "quota",  # the vendor's quota is used up (e.g. OpenAI's 429 insufficient_quota)
    "rate_limited",  # 429: too many requests for now
    "server_error",  # 5xx
    "timeout",
    "connection",  # refused, reset, DNS, TLS, proxy
    "bad_request",  # another 4xx: wrong base URL or model name, input the vendor refused
    "bad_response",  # not JSON, missing data, wrong count
    "wrong_dimension",  # vectors of another length than the configured dimensions
]
EMBEDDING_RETRYABLE_CODES: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "timeout", "connection"}
)

# What lies under a code, when the client can tell: the address has no DNS name, nothing
# listens there, the proxy failed, the TLS handshake or certificate failed; the reply is not
# JSON at all (a web page), or JSON that is not this OpenAI-compatible API.
ProviderCause = Literal["", "dns", "refused", "proxy", "tls", "not_json", "not_api"]

StatusCode = Literal["unauthorized", "no_balance", "rate_limited", "server_error", "bad_request"]


def provider_code_for_status(status: int) -> StatusCode:
    """What a non-200 HTTP status of a chat or embedding service means, as an error code.

    401/403 the key was refused; 402 the account has no balance; 429 the vendor limits the
    rate (retryable); 5xx the vendor is down or overloaded, and 408 it (or a proxy before it)
    gave up waiting for the request (both retryable: nothing in the request was wrong); any
    other status is a
    request the vendor refused, most often a wrong base URL (404) or model name. Each client
    words the message for its own settings and may refine a code from the vendor's body.
    """
    if status in (401, 403):
        return "unauthorized"
    if status == 402:
        return "no_balance"
    if status == 429:
        return "rate_limited"
    if status >= 500 or status == 408:
        return "server_error"
    return "bad_request"


class ProviderError(UserError):
    """A call to a chat or embedding service that failed.

    `code` is stable (the subclass's error codes), `message` tells a person what happened and
    what to do, `retryable` says whether one more attempt may succeed (after `retry_after`
    seconds when the vendor said so), `status` is the HTTP status when there was one and
    `vendor_message` the vendor's own (redacted) words, empty when there were none. `cause`
    narrows the code down for a person's sentence (a ProviderCause, empty when there is
    nothing to add). Never holds an API key.
    """

    message_key = "error.provider_failed"
    retryable_codes: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
        vendor_message: str = "",
        cause: ProviderCause = "",
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = code in self.retryable_codes if retryable is None else retryable
        self.retry_after = retry_after
        self.status = status
        self.vendor_message = vendor_message
        self.cause = cause

    def __reduce__(self) -> tuple[type[ProviderError], tuple[str, str], dict[str, object]]:
        # Survives pickling (worker processes, traces), which Exception's default args would not.
        return (type(self), (self.code, self.message), dict(self.__dict__))


class ChatError(ProviderError):
    """A chat completion that failed; `code` is a ChatErrorCode."""

    message_key = "error.chat_failed"
    retryable_codes = CHAT_RETRYABLE_CODES
    code: ChatErrorCode

    def __init__(
        self,
        code: ChatErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
        vendor_message: str = "",
        cause: ProviderCause = "",
    ) -> None:
        super().__init__(
            code,
            message,
            retryable=retryable,
            retry_after=retry_after,
            status=status,
            vendor_message=vendor_message,
            cause=cause,
        )


class EmbeddingError(ProviderError):
    """An embedding request that failed; `code` is an EmbeddingErrorCode."""

    message_key = "error.embedding_failed"
    retryable_codes = EMBEDDING_RETRYABLE_CODES
    code: EmbeddingErrorCode

    def __init__(
        self,
        code: EmbeddingErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
        vendor_message: str = "",
        cause: ProviderCause = "",
    ) -> None:
        super().__init__(
            code,
            message,
            retryable=retryable,
            retry_after=retry_after,
            status=status,
            vendor_message=vendor_message,
            cause=cause,
        )


class SSEError(ValueError):
    """The byte stream cannot be an event stream (a line longer than the limit); the chat
    client turns it into ChatError("bad_response")."""


# -- documents ---------------------------------------------------------------------------------
class ParseError(UserError):
    """A document that cannot be imported. `reason` is a stable code, `message` is for people."""

    message_key = "error.document_unreadable"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message

    def __reduce__(self) -> tuple[type[ParseError], tuple[str, str]]:
        # Parsing runs in worker processes: the error must survive pickling intact.
        return (type(self), (self.reason, self.message))


class ChunkError(UserError):
    """A document that yields no blocks. `reason` is a stable code, `message` is for people."""

    message_key = "error.document_no_blocks"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message

    def __reduce__(self) -> tuple[type[ChunkError], tuple[str, str]]:
        return (type(self), (self.reason, self.message))  # picklable across worker processes


# -- prompts, evaluation, traces -----------------------------------------------------------------
class PromptBundleError(UserError):
    """A prompt bundle that cannot be used; the message names the file and the problem."""

    exit_code = EXIT_USAGE
    message_key = "error.prompt_bundle_invalid"


class GoldError(UserError, ValueError):
    """A gold file that cannot be used; the message names the line and the problem."""

    exit_code = EXIT_USAGE
    message_key = "error.gold_invalid"


class TraceStoreError(UserError):
    """The trace store cannot be used; the message says why and what to do."""

    exit_code = EXIT_USAGE
    message_key = "error.trace_store"


class TraceNotFound(TraceStoreError):
    """No trace with that id in the store."""

    message_key = "error.trace_not_found"


class ArtifactUnavailable(TraceStoreError):
    """An artifact that was never stored (metadata mode), was removed, or is damaged."""

    message_key = "error.trace_artifact_unavailable"


class DiagnosticBundleError(UserError):
    """The diagnostic bundle could not be made safely; the message says why."""

    exit_code = EXIT_USAGE
    message_key = "error.diagnostic_bundle"


class OtlpExportError(Exception):
    """The collector did not take the spans; the message names the endpoint, not the headers.

    Not a UserError: the trace writer counts and reports it, it never ends a command."""


# -- upgrades ------------------------------------------------------------------------------------
class UpgradeError(UserError):
    """Base of every upgrade problem; the message says what happened and what to do."""

    exit_code = EXIT_USAGE
    message_key = "error.upgrade"


class DataTooNew(UpgradeError):
    """The data directory was written by a newer Citewise; it is never touched."""

    message_key = "error.upgrade_data_too_new"


class NoUpgradePath(UpgradeError):
    """An older format this build cannot migrate (the compatibility check failed)."""

    message_key = "error.upgrade_no_path"


class StampDamaged(UpgradeError):
    """The data directory's format stamp (formats.json) cannot be read."""

    message_key = "error.upgrade_stamp_damaged"


class UpgradeFailed(UpgradeError):
    """A step failed before the switch: the old data is active and untouched."""

    message_key = "error.upgrade_failed"

    def __init__(self, step: str, message: str) -> None:
        super().__init__(message)
        self.step = step


class UpgradeUnfinished(UpgradeError):
    """The switch committed but moving the new files in stopped; the next start finishes it."""

    message_key = "error.upgrade_unfinished"
