"""An incremental parser for Server-Sent Events (text/event-stream), fed bytes as they arrive.

It follows the WHATWG event-stream rules (CRLF, LF or CR line ends, comments, multi-line data,
a leading BOM) and keeps a line split across reads whole. It never interprets event data and
never buffers more than `max_line_bytes` of one line.
"""

from __future__ import annotations

import re

import msgspec

from engine.errors import SSEError

MAX_LINE_BYTES = 8 * 1024 * 1024
_LINE_END = re.compile(rb"[\r\n]")
_BOM = b"\xef\xbb\xbf"


class ServerSentEvent(msgspec.Struct, frozen=True):
    """One dispatched event: `data` is its data lines joined with newlines."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes with `feed()`, get the events they complete; call `end()` at end of stream.

    At the end of the stream an event whose closing blank line never came is still delivered
    (some servers omit it); its data is whatever arrived, so a cut JSON chunk fails to decode
    downstream instead of passing as complete.
    """

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._max_line_bytes = max_line_bytes
        self._skip_lf = False  # the previous line ended in CR; a LF right after it is its pair
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._started = True
        events: list[ServerSentEvent] = []
        pos = 0
        buf = self._buffer
        while True:
            if self._skip_lf and pos < len(buf):
                if buf[pos] == 0x0A:
                    pos += 1
                self._skip_lf = False
            found = _LINE_END.search(buf, pos)
            if found is None:
                break
            end = found.start()
            line = bytes(buf[pos:end])
            if buf[end] == 0x0D:
                if end + 1 < len(buf):
                    if buf[end + 1] == 0x0A:
                        end += 1
                else:
                    self._skip_lf = True
            pos = end + 1
            event = self._line(line)
            if event is not None:
                events.append(event)
        del buf[:pos]
        if len(buf) > self._max_line_bytes:
            raise SSEError(f"an event-stream line longer than {self._max_line_bytes} bytes")
        return events

    def end(self) -> list[ServerSentEvent]:
        """Events still pending when the stream ended (an unterminated last line included)."""
        events: list[ServerSentEvent] = []
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._line(b"")
        if event is not None:
            events.append(event)
        return events

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, e.g. DeepSeek's ": keep-alive"
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if self._id is not None:
            self._last_id = self._id
        if not self._data:
            self._event, self._id, self._retry = "", None, None
            return None
        event = ServerSentEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self._last_id,
            retry=self._retry,
        )
        self._data, self._event, self._id, self._retry = [], "", None, None
        return event
