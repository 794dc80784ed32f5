"""Presenter and followers over the real websocket: the presenter's moves reach every other
page, a late page lands on the current view, followers breaking away are counted, and a
follower can never steer anyone (the server refuses, with a clear error)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from wsclient import Client

from app.routes.join import qr_svg

TOKEN = "presenter-token-1234"


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module("--public", "--token", TOKEN, "--speed", "5")


def run(coro):
    return asyncio.run(coro)


def is_follow(pred=lambda m: True):
    return lambda m: m["type"] == "follow" and pred(m)


def is_error(code: str):
    return lambda m: m["type"] == "error" and m["code"] == code


async def _connect(srv, token: str | None = None) -> Client:
    url = srv.ws_url + (f"?token={token}" if token else "")
    c = await Client.connect(url)
    await c.until("snapshot")
    return c


PARTS = {
    "tour": {"active": True, "stop": 2, "revealed": True},
    "view": {"view": 1},
    "lab": {"open": "memory", "params": "405B", "precision": "bf16", "spread": False},
}


def test_presenter_moves_reach_followers_and_late_joiners(srv) -> None:
    async def go():
        lead = await _connect(srv, TOKEN)
        f1, f2 = await _connect(srv), await _connect(srv)
        await lead.send({"type": "present", "action": "start", "parts": PARTS})
        mine = await lead.until(is_follow(lambda m: m["lead"]))
        assert mine["presenting"] and mine["followers"] == 2 and mine["parts"] == {}
        for f in (f1, f2):
            got = await f.until(is_follow())
            assert got["presenting"] and not got["lead"] and got["parts"] == PARTS
        # A move names only what changed; the rest is kept.
        await lead.send({"type": "present", "action": "move", "parts": {"view": {"view": 3}}})
        for f in (f1, f2):
            got = await f.until(is_follow(lambda m: m["parts"]["view"] == {"view": 3}))
            assert got["parts"]["lab"]["params"] == "405B"
        # A page that comes late lands on the current view right after hello and snapshot.
        late = await Client.connect(srv.ws_url)
        first = [await late.recv() for _ in range(3)]
        assert [m["type"] for m in first] == ["hello", "snapshot", "follow"]
        assert first[2]["parts"] == {**PARTS, "view": {"view": 3}} and first[2]["presenting"]
        # Breaking away and coming back: the presenter's count follows.
        await f1.send({"type": "following", "following": False})
        assert (await lead.until(is_follow(lambda m: m["followers"] == 2)))["lead"]
        await f1.send({"type": "following", "following": True})
        await lead.until(is_follow(lambda m: m["followers"] == 3))
        await late.close()
        await lead.until(is_follow(lambda m: m["followers"] == 2))
        # The presenter leaves: the presentation ends for everyone.
        await lead.close()
        for f in (f1, f2):
            await f.until(is_follow(lambda m: not m["presenting"]))
        await f1.close()
        await f2.close()

    run(go())


def test_a_follower_can_never_steer_anyone(srv) -> None:
    async def go():
        lead = await _connect(srv, TOKEN)
        viewer = await _connect(srv)
        other = await _connect(srv)
        # Without the token: starting, moving and stopping are all refused, by name.
        for action in ("start", "move", "stop"):
            await viewer.send({"type": "present", "action": action, "parts": {"view": {"view": 2}}})
            err = await viewer.until(is_error("forbidden"))
            assert "presenter" in err["message"]
        await lead.send({"type": "present", "action": "start", "parts": {"view": {"view": 1}}})
        await other.until(is_follow(lambda m: m["presenting"]))
        await viewer.send({"type": "present", "action": "move", "parts": {"view": {"view": 4}}})
        await viewer.until(is_error("forbidden"))
        # ... and run controls too.
        await viewer.control("pause")
        assert "token" in (await viewer.until(is_error("forbidden")))["message"]
        # Nothing the follower sent reached the other page: its next follow frame is the
        # presenter's own move.
        await lead.send({"type": "present", "action": "move", "parts": {"view": {"view": 2}}})
        got = await other.until(is_follow())
        assert got["parts"]["view"] == {"view": 2}
        # Bad shapes are refused with a clear error and the connection goes on.
        bad = [
            ({"type": "present", "action": "dance"}, "invalid_field"),
            ({"type": "present", "action": "move", "parts": {"View!": {}}}, "invalid_field"),
            ({"type": "present", "action": "move", "parts": {"v": {"x": [1, 2]}}}, "invalid_field"),
            ({"type": "present", "action": "move", "parts": {"v": {"x": "y" * 300}}}, None),
            ({"type": "following", "following": "yes"}, "invalid_field"),
            ({"type": "present", "action": "start", "extra": 1}, "unknown_field"),
        ]
        for msg, code in bad:
            await lead.send(msg)
            err = await lead.until("error")
            assert code is None or err["code"] == code, (msg, err)
        # A second page with the presenter's rights takes over; the first one follows it.
        second = await _connect(srv, TOKEN)
        await second.send({"type": "present", "action": "start", "parts": {"view": {"view": 4}}})
        await second.until(is_follow(lambda m: m["lead"]))
        got = await lead.until(is_follow(lambda m: not m["lead"]))
        assert got["presenting"]
        await lead.send({"type": "present", "action": "move", "parts": {"view": {"view": 0}}})
        assert (await lead.until("error"))["code"] == "not_presenter"
        for c in (lead, viewer, other, second):
            await c.close()

    run(go())


def test_join_link_and_its_qr_code(srv) -> None:
    r = httpx.get(srv.url + "/api/join", timeout=10)
    assert r.status_code == 200
    body = r.json()
    assert body["url"].startswith("http://") and TOKEN not in body["url"]
    assert body["svg"] == qr_svg(body["url"])  # tests/test_qr.py reads the picture back
    svg = httpx.get(srv.url + "/join.svg", timeout=10)
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.text == body["svg"]


def test_serving_on_every_interface_prints_the_join_link(monkeypatch, capsys, tmp_path) -> None:
    import uvicorn

    from app.cli import serve as serve_cli
    from app.routes import join

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    monkeypatch.setattr(serve_cli, "lan_address", lambda: "192.168.1.20")
    monkeypatch.setattr(join, "lan_address", lambda: "192.168.1.20")
    argv = ["--host", "0.0.0.0", "--port", "8123", "--run-dir", str(tmp_path / "run")]
    assert serve_cli.serve_main(argv) == 0
    out = capsys.readouterr().out
    assert "Join link for the room: http://192.168.1.20:8123/" in out
    # The token is for the presenter's own link, never the room's.
    line = next(x for x in out.splitlines() if x.startswith("Join link"))
    assert "token" not in line


def test_the_join_link_names_the_address_the_room_uses() -> None:
    from app.routes.join import join_url
    from app.settings import Settings

    named = Settings(host="0.0.0.0", port=8000, allowed_hosts=["teacher-pc.local"])
    assert join_url(named) == "http://teacher-pc.local:8000/"
    assert join_url(Settings(host="10.0.0.5", port=8001)) == "http://10.0.0.5:8001/"
    loop = Settings(host="127.0.0.1", port=8002)
    assert join_url(loop, "localhost:8002") == "http://localhost:8002/"
    assert join_url(loop) == "http://127.0.0.1:8002/"
