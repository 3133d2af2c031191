"""Whether the bytes a connection has sent so far make a whole HTTP/1.1 request, read before the
application sees it (strongroom/worker.py): wait for more, hand it over, tell the client to go on
sending its body ("100 Continue"), or refuse it at once. Only what the decision needs is read
here; gunicorn's own parser reads the request again, in full, for the application."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEAD_LIMIT = 64 * 1024  # a longer head is refused (431); browsers send a few kilobytes
LINE_LIMIT = 8190 + 2  # gunicorn's longest request line (limit_request_line) and its CRLF
BODY_LIMIT = 2_621_440  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE: a larger body is refused (413)
_METHOD = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]{0,32}")
_BARE_LF = re.compile(rb"(?:^|[^\r])\n")
_FIELD = re.compile(rb"\r\n([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\r\n]*?)[ \t]*(?=\r\n)")
_EXPECT_LINE = re.compile(rb"\r\nexpect:[^\r\n]*", re.IGNORECASE)


@dataclass(frozen=True)
class Arrival:
    """What to do with what has arrived: "wait", "go" (hand `data` to the application), "continue"
    (send 100 Continue, then wait) or "refuse" (answer `status` `reason` and close)."""

    step: str
    data: bytes = b""
    status: int = 0
    reason: str = ""


WAIT = Arrival("wait")
CONTINUE = Arrival("continue")


def _refuse(status: int, reason: str) -> Arrival:
    return Arrival("refuse", status=status, reason=reason)


def arrival(data: bytes | bytearray, *, continued: bool = False) -> Arrival:
    """Read `data` (all a connection sent since its last request). `continued`: 100 Continue
    has been sent for it (the Expect field is then taken out of what the application reads, so that
    gunicorn does not send it again)."""
    method = _METHOD.match(data)
    assert method is not None  # {0,32} always matches
    if method.end() == len(data):
        return _refuse(400, "Bad Request") if len(data) >= 32 else WAIT
    if method.end() == 0 or data[method.end()] != ord(" "):
        return _refuse(400, "Bad Request")  # not a request line: a TLS hello, noise
    line_end = data.find(b"\n")
    if line_end < 0:
        return _refuse(414, "URI Too Long") if len(data) > LINE_LIMIT else WAIT
    end = data.find(b"\r\n\r\n")
    head = bytes(data[: end if end >= 0 else len(data)])
    if _BARE_LF.search(head):
        return _refuse(400, "Bad Request")  # lines end in CRLF; gunicorn refuses a bare LF too
    if end < 0:
        return _refuse(431, "Request Header Fields Too Large") if len(data) > HEAD_LIMIT else WAIT
    if end > HEAD_LIMIT:
        return _refuse(431, "Request Header Fields Too Large")
    fields: dict[bytes, list[bytes]] = {}
    for name, value in _FIELD.findall(head + b"\r\n"):
        fields.setdefault(name.lower(), []).append(value)
    version = head.split(b"\r\n", 1)[0].rpartition(b" ")[2]
    if version == b"HTTP/1.1" and len(fields.get(b"host", [])) != 1:
        return _refuse(400, "Bad Request")  # RFC 9112 3.2: one Host field in HTTP/1.1
    body = bytes(data[end + 4 :])
    lengths, codings = fields.get(b"content-length", []), fields.get(b"transfer-encoding", [])
    if len(lengths) > 1 or (lengths and codings) or (codings and not _chunked(codings)):
        return Arrival("go", bytes(data))  # gunicorn's parser refuses these at once (400)
    if codings:
        done = _chunks_done(body)
    elif lengths:
        if not lengths[0].isdigit():
            return Arrival("go", bytes(data))  # refused by the parser at once (400)
        wanted = int(lengths[0])
        if wanted > BODY_LIMIT:
            return _refuse(413, "Content Too Large")
        done = len(body) >= wanted
    else:
        done = True
    if isinstance(done, Arrival):
        return done
    if done:
        if continued:
            return Arrival("go", _EXPECT_LINE.sub(b"", head, count=1) + bytes(data[end:]))
        return Arrival("go", bytes(data))
    expects = [v.lower() for v in fields.get(b"expect", [])]
    if expects == [b"100-continue"] and head.split(b"\r\n", 1)[0].endswith(b"HTTP/1.1"):
        return WAIT if continued else CONTINUE
    return WAIT


def _chunked(codings: list[bytes]) -> bool:
    return [c.lower() for c in codings] == [b"chunked"]


def _chunks_done(body: bytes) -> bool | Arrival:
    """Whether a chunked body has arrived whole (its last chunk and trailer section), or the
    refusal of one that is malformed or larger than BODY_LIMIT."""
    at, total = 0, 0
    while True:
        line_end = body.find(b"\r\n", at)
        if line_end < 0:
            return _refuse(400, "Bad Request") if len(body) - at > 1024 else False
        size_text = body[at:line_end].split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 8 or not re.fullmatch(rb"[0-9A-Fa-f]+", size_text):
            return _refuse(400, "Bad Request")
        size = int(size_text, 16)
        at = line_end + 2
        if size == 0:  # the trailer section: empty, or fields ending in a blank line
            return body.startswith(b"\r\n", at) or body.find(b"\r\n\r\n", at - 2) >= 0
        total += size
        if total > BODY_LIMIT:
            return _refuse(413, "Content Too Large")
        if len(body) < at + size + 2:
            return False
        if body[at + size : at + size + 2] != b"\r\n":
            return _refuse(400, "Bad Request")
        at += size + 2
