"""An action's form, read by us and not by a multipart parser: the headers
are checked before a byte of the body is read, then at most MAX_BODY bytes
of application/x-www-form-urlencoded are taken. A file part, a multipart
body, a body without a length or a long one is refused unread.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.requests import Request

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_BODY = 8192  # bytes: a form of ids and a few words
MAX_FIELDS = 12
MAX_VALUE = 1024  # characters of one field


class FormRefused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def check_headers(headers: Headers) -> None:
    """Before the body: a urlencoded form of a stated, small length."""
    content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != FORM_TYPE:
        raise FormRefused(f"an action is posted as {FORM_TYPE}, nothing else", 415)
    length = headers.get("content-length")
    if length is None or "transfer-encoding" in headers:
        raise FormRefused("an action's POST states its Content-Length", 411)
    if not (length.isascii() and length.isdigit()):
        raise FormRefused("the Content-Length is no number")
    if int(length) > MAX_BODY:
        raise FormRefused(f"an action's form has at most {MAX_BODY} bytes", 413)


async def read_form(request: Request) -> dict[str, str]:
    """The fields of a form whose headers passed check_headers: each once,
    as text without NUL. Reading stops at MAX_BODY bytes whatever the
    header said."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise FormRefused(f"an action's form has at most {MAX_BODY} bytes", 413)
    try:
        pairs = parse_qsl(
            body.decode("ascii"),
            keep_blank_values=True,
            strict_parsing=bool(body),
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        raise FormRefused("the form is not readable urlencoded UTF-8 of a few fields") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise FormRefused(f"the form has the field {name[:40]!r} twice")
        if "\0" in name or "\0" in value:
            raise FormRefused("a field holds a NUL character: nothing can be named so")
        if len(value) > MAX_VALUE:
            raise FormRefused(f"the field {name[:40]!r} is over {MAX_VALUE} characters")
        form[name] = value
    return form
