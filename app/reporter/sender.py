"""The reporter's sender: a background thread that posts batches of step reports to the
server, so the training loop only ever appends to a bounded buffer.

Nothing here may hold up or break the job. The buffer has a fixed size: when the server is
away for long, the oldest reports go and are counted (the count travels with the next batch,
so the page can say so). A batch that could not be sent is kept and tried again, with the
pause between tries growing to a couple of seconds; a connection is reopened as needed. A
batch the server refuses as invalid (4xx) is not retried: it is dropped, counted and said
once in the log.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("trainingrun.attach")

ATTACH_PATH = "/api/attach"
MAX_BATCH = 128  # protocol.ATTACH_MAX_STEPS
MAX_BODY = 60 * 1024  # under the server's default body limit (64 KiB)
RETRY_FIRST_S = 0.1
RETRY_MAX_S = 2.0


class Sender:
    """Posts `{...head, steps: [...], dropped}` batches from `buffer` to `url`/api/attach.

    `resolve` turns a buffered item into the report's JSON dict (or None to skip it); it runs
    here, in the sender's thread, so reading CUDA events or a loss tensor never waits in the
    training loop."""

    def __init__(
        self,
        url: str,
        head: Callable[[], dict[str, Any]],
        resolve: Callable[[Any], dict[str, Any] | None],
        *,
        capacity: int = 4096,
        interval_s: float = 0.25,
        timeout_s: float = 2.0,
        token: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"report URL must be http(s)://host:port, not {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.path = parts.path.rstrip("/") + ATTACH_PATH
        self.head = head
        self.resolve = resolve
        self.buffer: deque[Any] = deque(maxlen=capacity)
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.token = token
        self.dropped = 0  # reports lost: the buffer overflowed, or the server refused them
        self.sent = 0
        self.failures = 0  # tries that did not reach the server
        self.cpu_s = 0.0  # CPU time this thread has used
        self.refused: str | None = None  # the server's latest refusal, in its words
        self._retry: list[dict[str, Any]] = []
        self._conn: http.client.HTTPConnection | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._deadline = float("inf")
        self._thread = threading.Thread(target=self._run, name="trainingrun-reporter", daemon=True)
        self._thread.start()

    # --- the training loop's side: O(1), never blocks ------------------------------------------

    def put(self, item: Any) -> None:
        if len(self.buffer) == self.buffer.maxlen:
            self.dropped += 1  # deque drops the oldest itself
        self.buffer.append(item)

    def close(self, timeout_s: float = 2.0) -> None:
        """Send what is buffered, for at most `timeout_s`, then stop the thread."""
        self._deadline = time.monotonic() + timeout_s
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s + self.timeout_s + 0.5)
        self._close_conn()

    # --- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        pause = RETRY_FIRST_S
        while True:
            if self._stop.is_set():
                if (not self.buffer and not self._retry) or time.monotonic() > self._deadline:
                    return
            else:
                self._wake.wait(self.interval_s)
                self._wake.clear()
            cpu = time.thread_time()
            try:
                ok = self._send_once()
            except Exception as exc:  # never let the thread die: the job goes on regardless
                log.debug("reporter: %s", exc)
                ok = False
            self.cpu_s += time.thread_time() - cpu
            if ok:
                pause = RETRY_FIRST_S
                continue
            if self._stop.is_set():
                return  # the server is away and the job is finishing: do not hold it up
            self._stop.wait(pause)
            pause = min(RETRY_MAX_S, pause * 2)

    def _take(self) -> list[dict[str, Any]]:
        """The next batch: what failed last time, else up to MAX_BATCH buffered reports."""
        if self._retry:
            return self._retry
        out: list[dict[str, Any]] = []
        while self.buffer and len(out) < MAX_BATCH:
            try:
                item = self.buffer.popleft()
            except IndexError:
                break
            try:
                report = self.resolve(item)
            except Exception as exc:
                log.debug("reporter: could not read a step: %s", exc)
                report = None
            if report is not None:
                out.append(report)
        return out

    def _send_once(self) -> bool:
        steps = self._take()
        if not steps:
            return True
        body = self._body(steps)
        while len(body) > MAX_BODY and len(steps) > 1:
            half = len(steps) // 2
            self.buffer.extendleft(reversed(steps[half:]))  # already resolved: sent next time
            steps = steps[:half]
            body = self._body(steps)
        self._retry = steps
        status, text = self._post(body)
        if status is None:
            self.failures += 1
            return False
        self._retry = []
        if status < 300:
            self.sent += len(steps)
            self.refused = None
            return True
        self.dropped += len(steps)
        message = _message(text)
        if message != self.refused:
            log.warning("trainingrun server refused %d step reports: %s", len(steps), message)
        self.refused = message
        return status < 500 and status != 409

    def _body(self, steps: list[dict[str, Any]]) -> bytes:
        batch = {**self.head(), "steps": steps, "dropped": self.dropped}
        return json.dumps(batch, separators=(",", ":"), allow_nan=False).encode()

    def _post(self, body: bytes) -> tuple[int | None, str]:
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in (1, 2):  # a kept-alive connection the server closed: reopen once
            try:
                conn = self._connection()
                conn.request("POST", self.path, body=body, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read(4096).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as exc:
                self._close_conn()
                if attempt == 2 or isinstance(exc, ConnectionRefusedError | TimeoutError):
                    return None, str(exc)
        return None, ""

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            kind = (
                http.client.HTTPSConnection
                if self.scheme == "https"
                else http.client.HTTPConnection
            )
            self._conn = kind(self.host, self.port, timeout=self.timeout_s)
        return self._conn

    def _close_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None


def _message(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text[:200]
    if isinstance(data, dict) and "message" in data:
        return str(data["message"])[:300]
    return text[:300]
