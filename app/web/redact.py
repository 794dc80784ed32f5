"""The presenter token kept out of the server log."""

from __future__ import annotations

import logging
import re
from typing import Any

_TOKEN_IN_URL = re.compile(r"([?&](?:token|access_token)=)[^&\s\"']*", re.IGNORECASE)


def redact(text: str) -> str:
    return _TOKEN_IN_URL.sub(r"\1***", text) if "token=" in text.lower() else text


def _redact_any(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactTokens(logging.Filter):
    """Replaces the value of `token=` in logged URLs (uvicorn logs each request's path and
    query) with ***, so the server log never holds the presenter token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_any(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redact_any(v) for k, v in record.args.items()}
        return True


REQUEST_LOGGERS = ("uvicorn.access", "uvicorn.error")


def install_log_redaction() -> None:
    for name in REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())
