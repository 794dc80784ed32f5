"""Request bodies are capped at 64 KiB on every route, and a 422 never echoes large input.

A client that announces or streams a bigger body gets 413 before the server reads on, so
posting megabytes costs the server nothing; a validation error names the field and the
problem, not the client's bytes."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module()


def _peak_rss_kib(pid: int) -> int:
    """The server process's peak resident memory (VmHWM), which a big allocation raises even
    when it is freed again before the next look."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def _raw_request(port: int, head: str, body: bytes = b"", timeout: float = 5.0) -> bytes:
    """Send a request head (and maybe part of a body); read the response head and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode() + body)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    return data
                data += chunk
            top, _, rest = data.partition(b"\r\n\r\n")
            length = 0
            for line in top.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(rest) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
            return top + b"\r\n\r\n" + rest
        except (TimeoutError, ConnectionResetError):
            return data


def test_a_too_large_content_length_is_refused_at_once(srv) -> None:
    for path in ("/api/run/control", "/api/labs/memory", "/api/health", "/"):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        )
        t0 = time.monotonic()
        answer = _raw_request(srv.port, head, b"{")  # the rest of the body never comes
        assert answer.startswith(b"HTTP/1.1 413"), (path, answer[:200])
        assert time.monotonic() - t0 < 4
        assert b'"too_large"' in answer and b"65536" in answer


def test_a_one_megabyte_body_gets_413_fast(srv) -> None:
    t0 = time.monotonic()
    r = httpx.post(
        srv.url + "/api/run/control",
        content=b'{"action":"pause","token":"' + b"x" * (1 << 20) + b'"}',
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert r.status_code == 413 and r.json()["code"] == "too_large"
    assert time.monotonic() - t0 < 4
    assert httpx.get(srv.url + "/api/run", timeout=10).json()["state"] == "running"


def test_a_streamed_body_is_cut_off_too(srv) -> None:
    def chunks():
        for _ in range(64):  # 4 MiB in all, with no Content-Length (chunked)
            yield b" " * 65536

    try:
        r = httpx.post(
            srv.url + "/api/labs/memory",
            content=chunks(),
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert r.status_code == 413
    except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
        pass  # the server answered 413 and closed while the client was still sending
    assert httpx.get(srv.url + "/api/health", timeout=10).status_code == 200


def test_posting_megabytes_does_not_balloon_the_server(srv) -> None:
    before = _peak_rss_kib(srv.proc.pid)
    answers = []
    for _ in range(3):
        big = b'{"action":"reset","preset":"' + b"p" * (20 << 20) + b'"}'
        try:
            r = httpx.post(
                srv.url + "/api/run/control",
                content=big,
                headers={"Content-Type": "application/json"},
                timeout=30,
            )
            answers.append(r.status_code)
        except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
            answers.append("closed")  # refused before the client finished sending
    after = _peak_rss_kib(srv.proc.pid)
    assert after - before < 50 * 1024, f"peak RSS grew by {(after - before) // 1024} MiB"
    assert set(answers) <= {413, "closed"}, answers
    assert httpx.get(srv.url + "/api/health", timeout=10).status_code == 200


def test_a_body_just_under_the_cap_is_read(srv) -> None:
    pad = " " * (LIMIT - 100)
    r = httpx.post(
        srv.url + "/api/labs/memory",
        content=('{"params": "7B"' + pad + "}").encode(),
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert r.status_code == 200 and r.json()["params"] == 7e9


def test_a_422_does_not_echo_a_long_string(srv) -> None:
    long = "q" * 50_000
    cases = [
        ("/api/run/control", {"action": "reset", "preset": long}),
        ("/api/run/control", {"action": "pause", long: 1}),
        ("/api/labs/memory", {"params": long}),
        ("/api/labs/cost", {"params": "70B", "tokens": long}),
    ]
    for path, body in cases:
        r = httpx.post(srv.url + path, json=body, timeout=10)
        assert r.status_code == 422, path
        assert "q" * 200 not in r.text, path
        assert len(r.text) < 4000, (path, len(r.text))
        detail = r.json()["detail"]
        assert detail and all("loc" in d and "msg" in d for d in detail)
    r = httpx.get(srv.url + "/api/labs/memory", params={"params": long}, timeout=10)
    assert r.status_code == 422 and "q" * 200 not in r.text
    # Short input is still shown, so a person can see what they sent.
    r = httpx.post(srv.url + "/api/labs/memory", json={"params": "lots"}, timeout=10)
    assert r.status_code == 422 and "lots" in r.text
    assert r.json()["detail"][0]["loc"][-1] == "params"
