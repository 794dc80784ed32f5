"""REST endpoints, pages and OpenAPI; and who may control a public server."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import websockets
from wsclient import Client, is_error, is_event

from app.protocol import PROTOCOL_VERSION

TOKEN = "presenter-secret-123"


def test_rest_endpoints_and_pages(live_server) -> None:
    srv = live_server()
    get = lambda path, **kw: httpx.get(srv.url + path, timeout=10, **kw)  # noqa: E731
    health = get("/api/health").json()
    assert health["ok"] and health["protocol"] == PROTOCOL_VERSION
    run = get("/api/run").json()
    assert run["run_id"] == health["run_id"] and run["state"] == "running"
    r = httpx.post(srv.url + "/api/run/control", json={"type": "control", "action": "pause"})
    assert r.status_code == 200 and r.json()["status"]["state"] == "paused"
    assert get("/api/run").json()["state"] == "paused"
    r = httpx.post(srv.url + "/api/run/control", json={"action": "fail_gpu", "gpu": 99})
    assert r.status_code == 400 and r.json()["code"] == "bad_gpu"
    r = httpx.post(srv.url + "/api/run/control", json={"action": "speed", "value": 0})
    assert r.status_code == 422
    r = httpx.post(srv.url + "/api/run/control", json={"action": "checkpoint_now"})
    assert r.status_code == 200 and r.json()["events"][0]["kind"] == "checkpoint_saved"
    assert isinstance(get("/api/checkpoints").json(), list)
    scenes = get("/api/scenes").json()
    assert any(s["name"] == "training-run" for s in scenes)
    assert get("/api/scenes/training-run").json()["parts"]
    assert get("/api/scenes/nope").status_code == 404
    spec = get("/openapi.json").json()
    assert {"/api/run", "/api/run/control", "/api/health", "/api/checkpoints"} <= set(spec["paths"])
    assert get("/docs").status_code == 200
    page = get("/", headers={"Accept-Encoding": "gzip"})
    assert page.status_code == 200 and "html" in page.headers["content-type"]
    assert page.headers["cache-control"] == "no-cache"
    assert "server" not in page.headers  # no server name on each of the page's many files
    three = get("/static/vendor/three/build/three.module.js", headers={"Accept-Encoding": "gzip"})
    if three.status_code == 404:  # vendor layout differs: find any vendored module
        pytest.fail("three.js is not served at /static/vendor/three/build/three.module.js")
    assert three.headers.get("content-encoding") == "gzip"
    assert "max-age" in three.headers["cache-control"]


def test_public_server_needs_the_token_to_control(live_server) -> None:
    srv = live_server("--public", "--token", TOKEN)

    async def go():
        out = {}
        c = await Client.connect(srv.ws_url)
        out["hello"] = await c.recv()
        await c.until("snapshot")
        await c.control("pause")
        out["denied"] = await c.until("error")
        await c.control("pause", token="wrong-token-000")
        out["denied2"] = await c.until("error")
        await c.control("pause", token=TOKEN)
        out["paused"] = await c.until(is_event("paused"))
        await c.close()
        p = await Client.connect(srv.ws_url + "?token=" + TOKEN)
        out["presenter_hello"] = await p.recv()
        await p.until("snapshot")
        await p.control("resume")
        out["resumed"] = await p.until(is_event("resumed"))
        await p.close()
        try:
            await websockets.connect(srv.ws_url, origin="http://evil.example")
            out["foreign"] = "accepted"
        except websockets.InvalidStatus as exc:
            out["foreign"] = exc.response.status_code
        same = await Client.connect(srv.ws_url, origin=f"http://127.0.0.1:{srv.port}")
        out["same_origin"] = (await same.recv())["type"]
        await same.close()
        return out

    o = asyncio.run(go())
    assert o["hello"]["can_control"] is False
    assert is_error("forbidden")(o["denied"]) and is_error("forbidden")(o["denied2"])
    assert o["paused"]["kind"] == "paused"
    assert o["presenter_hello"]["can_control"] is True and o["resumed"]["kind"] == "resumed"
    assert o["foreign"] == 403 and o["same_origin"] == "hello"
    body = {"type": "control", "action": "pause"}
    assert httpx.post(srv.url + "/api/run/control", json=body).status_code == 403
    r = httpx.post(
        srv.url + "/api/run/control",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["status"]["state"] == "paused"
    # Watching stays open to everyone.
    assert httpx.get(srv.url + "/api/run").status_code == 200


def test_the_pages_files_revalidate_with_a_short_etag(live_server) -> None:
    """A page file carries a 16-digit ETag and no Last-Modified; asking again with that ETag
    gets a 304 with no body, and a stale or foreign one gets the file."""
    srv = live_server()
    url = srv.url + "/static/js/main.js"
    first = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=10)
    etag = first.headers["etag"]
    assert first.status_code == 200 and len(etag.strip('"')) == 16, etag
    assert "last-modified" not in first.headers and "accept-ranges" not in first.headers
    again = httpx.get(url, headers={"If-None-Match": etag}, timeout=10)
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag and again.headers["cache-control"] == "no-cache"
    listed = httpx.get(url, headers={"If-None-Match": f'"0000000000000000", W/{etag}'}, timeout=10)
    assert listed.status_code == 304
    stale = httpx.get(url, headers={"If-None-Match": '"0123456789abcdef"'}, timeout=10)
    assert stale.status_code == 200 and stale.content == first.content
