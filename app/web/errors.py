"""Errors told to clients without echoing what they sent: the error body every edge check
answers with, and validation errors with locations, messages and input kept short."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.responses import Response


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"type": "error", "code": code, "message": message}).encode()


_SHORT = 60


def short_repr(value: Any, limit: int = _SHORT) -> str:
    """A repr for messages: long input cut short, never an error of its own."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_text(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 3] + "..."
    return value


def _safe_value(value: Any) -> Any:
    """Small plain values as they are; anything else (megabytes of text, a number JSON
    cannot carry, an exception) as a short repr."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, float) and abs(value) < 1e300:  # False for NaN and infinities
        return value
    if isinstance(value, str) and len(value) <= _SHORT:
        return value
    return short_repr(value)


def safe_errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors fit to send back: the shape FastAPI gives (loc, msg, type, input,
    ctx), with locations and messages kept short and input only as a short repr."""
    out = []
    for e in list(errors)[:20]:
        item: dict[str, Any] = {
            "type": str(e.get("type", "")),
            "loc": [_short_text(x, _SHORT) if isinstance(x, str) else x for x in e.get("loc", ())],
            "msg": _short_text(str(e.get("msg", "")), 300),
        }
        if "input" in e:
            item["input"] = _safe_value(e["input"])
        if isinstance(e.get("ctx"), dict):
            item["ctx"] = {str(k)[:_SHORT]: _safe_value(v) for k, v in e["ctx"].items()}
        out.append(item)
    return out


async def validation_error_handler(request: Request, exc: RequestValidationError) -> Response:
    from fastapi.responses import JSONResponse

    return JSONResponse({"detail": safe_errors(exc.errors())}, status_code=422)
