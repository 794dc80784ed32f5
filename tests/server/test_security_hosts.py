"""DNS rebinding: a page on a foreign name that resolves to this machine must not reach the
run. Only known host names are served (loopback, the address the server listens on, and
--allowed-host), and a browser's Origin must name one of them, on /ws and on REST controls."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import websockets
from wsclient import Client, is_event

from app.cli.serve import settings_from_args
from app.settings import Settings
from app.web.guard import Guard
from app.web.hosts import split_host

EVIL = "evil.example"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module()


async def _ws_status(srv, host: str, origin: str | None) -> int | dict:
    """Open /ws on the server as if the browser had resolved `host` to it: the handshake's
    status when refused, the hello when accepted."""
    uri = f"ws://{host}:{srv.port}/ws"
    try:
        c = await Client.connect(uri, host="127.0.0.1", port=srv.port, origin=origin)
    except websockets.InvalidStatus as exc:
        return exc.response.status_code
    hello = await c.recv()
    await c.close()
    return hello


def _state(srv) -> str:
    return httpx.get(srv.url + "/api/run", timeout=10).json()["state"]


def test_rebound_websocket_is_refused(srv) -> None:
    got = run(_ws_status(srv, EVIL, f"http://{EVIL}:{srv.port}"))
    assert got == 403


def test_foreign_host_gets_400_on_every_route(srv) -> None:
    for path in ("/", "/api/run", "/api/health", "/static/js/main.js", "/nope"):
        r = httpx.get(srv.url + path, headers={"Host": f"{EVIL}:{srv.port}"}, timeout=10)
        assert r.status_code == 400, path
        body = r.json()
        assert body["code"] == "bad_host" and EVIL in body["message"]
        assert "\n" not in body["message"] and "--allowed-host" in body["message"]
    r = httpx.post(
        srv.url + "/api/run/control",
        json={"action": "pause"},
        headers={"Host": EVIL, "Origin": f"http://{EVIL}"},
        timeout=10,
    )
    assert r.status_code == 400
    assert _state(srv) == "running"


def test_rest_control_from_a_foreign_origin_is_refused(srv) -> None:
    r = httpx.post(
        srv.url + "/api/run/control",
        json={"action": "pause"},
        headers={"Origin": f"http://{EVIL}"},
        timeout=10,
    )
    assert r.status_code == 403 and r.json()["code"] == "forbidden_origin"
    assert _state(srv) == "running"
    r = httpx.post(
        srv.url + "/api/run/control",
        json={"action": "pause"},
        headers={"Origin": "null"},
        timeout=10,
    )
    assert r.status_code == 403
    assert _state(srv) == "running"


def test_loopback_names_still_work(srv) -> None:
    for host in ("127.0.0.1", "localhost", "LOCALHOST", "[::1]"):
        r = httpx.get(srv.url + "/api/run", headers={"Host": f"{host}:{srv.port}"}, timeout=10)
        assert r.status_code == 200, host
    got = run(_ws_status(srv, "localhost", f"http://localhost:{srv.port}"))
    assert isinstance(got, dict) and got["type"] == "hello" and got["can_control"] is True
    # A same-origin page's control, then one from a script (no Origin).
    r = httpx.post(
        srv.url + "/api/run/control",
        json={"action": "pause"},
        headers={"Origin": f"http://127.0.0.1:{srv.port}"},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["status"]["state"] == "paused"
    r = httpx.post(srv.url + "/api/run/control", json={"action": "resume"}, timeout=60)
    assert r.status_code == 200 and r.json()["status"]["state"] == "running"


def test_allowed_host_option_lets_a_name_in(live_server) -> None:
    srv = live_server("--allowed-host", EVIL, "--allowed-host", "other.example")

    async def go():
        uri = f"ws://{EVIL}:{srv.port}/ws"
        c = await Client.connect(uri, host="127.0.0.1", port=srv.port, origin=f"http://{EVIL}")
        hello = await c.recv()
        await c.until("snapshot")
        await c.control("pause")
        paused = await c.until(is_event("paused"))
        await c.close()
        return hello, paused

    hello, paused = run(go())
    assert hello["can_control"] is True and paused["kind"] == "paused"
    r = httpx.post(
        srv.url + "/api/run/control",
        json={"action": "resume"},
        headers={"Host": f"{EVIL}:{srv.port}", "Origin": f"http://{EVIL}:{srv.port}"},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["status"]["state"] == "running"
    r = httpx.get(srv.url + "/api/run", headers={"Host": "third.example"}, timeout=10)
    assert r.status_code == 400


# ---- the rules, as units --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost", "localhost"),
        ("LocalHost:8000", "localhost"),
        ("127.0.0.1:1", "127.0.0.1"),
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("example.org.", "example.org"),
        ("", None),
        ("::1", None),
        ("a:b", None),
        ("[::1", None),
        ("[::1]x", None),
        ("host:80:80", None),
    ],
)
def test_split_host(header: str, name: str | None) -> None:
    assert split_host(header) == name


def test_guard_hosts_and_origins() -> None:
    g = Guard(Settings(host="127.0.0.1"))
    assert g.host_ok("localhost:1234") and g.host_ok("127.0.0.2") and g.host_ok("[::1]:9")
    assert not g.host_ok(EVIL) and not g.host_ok(None) and not g.host_ok("")
    assert g.origin_ok(None)  # scripts send no Origin
    assert g.origin_ok("http://localhost:3000") and g.origin_ok("https://127.0.0.1")
    assert not g.origin_ok(f"http://{EVIL}") and not g.origin_ok("null")
    assert not g.origin_ok("file://") and not g.origin_ok(f"ws://{EVIL}")

    # The name the server was told to listen on is known; a wildcard names nothing.
    assert Guard(Settings(host="192.168.1.5")).host_ok("192.168.1.5:8000")
    assert Guard(Settings(host="Classroom-PC")).origin_ok("http://classroom-pc:8000")
    wild = Guard(Settings(host="0.0.0.0"))
    assert wild.host_ok("localhost:8000") and not wild.host_ok("0.0.0.0:8000")
    assert not wild.host_ok("192.168.1.5:8000")
    listed = Guard(Settings(host="0.0.0.0", allowed_hosts=["192.168.1.5", "Teacher.Local"]))
    assert listed.host_ok("192.168.1.5:8000") and listed.host_ok("teacher.local")
    assert listed.origin_ok("http://teacher.local:8000")
    # Explicit origins still work as before.
    extra = Guard(Settings(allowed_origins=["http://app.example:9000"]))
    assert extra.origin_ok("http://app.example:9000") and not extra.origin_ok("http://app.example")


def test_allowed_hosts_from_the_command_line_and_the_environment(monkeypatch) -> None:
    s = settings_from_args(["--allowed-host", "a.example", "--allowed-host", "[fe80::1]:80"])
    assert s.allowed_hosts == ["a.example", "fe80::1"]
    monkeypatch.setenv("TRAININGRUN_ALLOWED_HOSTS", "b.example, 10.0.0.7")
    assert Settings().allowed_hosts == ["b.example", "10.0.0.7"]
    monkeypatch.setenv("TRAININGRUN_ALLOWED_HOSTS", '["c.example"]')
    assert Settings().allowed_hosts == ["c.example"]
    with pytest.raises(SystemExit):
        settings_from_args(["--allowed-host", "http://x.example/"])
