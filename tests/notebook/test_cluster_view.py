"""The notebook view built headless: its pythreejs scene graph holds the live cluster's
servers, GPUs and switches where the page's layout puts them, and each step re-colours the
GPUs by what their lanes of the step are doing."""

from __future__ import annotations

import copy

import pytest
from extras import need

p3 = need("pythreejs", "notebook")

from app.notebook import ClusterView  # noqa: E402
from app.notebook.layout import layout  # noqa: E402
from app.notebook.view import IDLE, KIND_MEANING, meaning_colours, ws_url  # noqa: E402


@pytest.fixture(scope="module")
def followed(live_server_module):
    """A real server (8 GPUs on 2 servers, 2 leaves, 2 spines) and a view following it over
    the real websocket until a few steps have arrived."""
    srv = live_server_module("--speed", "10", "--checkpoint-every", "0")
    view = ClusterView(srv.url)
    try:
        assert view.wait_for(lambda v: v.hello is not None and len(v.losses) >= 3, 60)
        yield srv, view
    finally:
        view.close()


def meshes(view: ClusterView, prefix: str) -> list[p3.Mesh]:
    return [m for m in view.group.children if m.name.startswith(prefix + " ")]


def test_scene_graph_holds_the_cluster_where_the_layout_puts_it(followed) -> None:
    _, view = followed
    topo = view.hello["topology"]
    assert len(meshes(view, "GPU")) == len(topo["gpus"]) == 8
    assert len(meshes(view, "server")) == len(topo["servers"]) == 2
    assert len(meshes(view, "leaf")) == len(topo["leaves"]) == 2
    assert len(meshes(view, "spine")) == len(topo["spines"]) == 2
    where = layout(topo)
    for kind, key in (
        ("GPU", "gpus"),
        ("server", "servers"),
        ("leaf", "leaves"),
        ("spine", "spines"),
    ):
        for mesh, p in zip(meshes(view, kind), where[key], strict=True):
            assert mesh.name == f"{kind} {p['id']}"
            assert tuple(mesh.position) == pytest.approx((p["x"], p["y"], p["z"]))
    # Two GPUs of a server sit side by side on its board, above it; leaves above the servers,
    # spines above the leaves.
    gpu_y = {m.position[1] for m in meshes(view, "GPU")}
    assert min(gpu_y) > max(m.position[1] for m in meshes(view, "server"))
    assert min(m.position[1] for m in meshes(view, "leaf")) > max(gpu_y)
    assert min(m.position[1] for m in meshes(view, "spine")) > max(
        m.position[1] for m in meshes(view, "leaf")
    )
    assert "8 GPUs on 2 servers" in view.status.value


def test_a_step_message_recolours_the_gpus(followed) -> None:
    _, view = followed
    colours = meaning_colours()
    step = copy.deepcopy(view.step)
    assert step is not None and step["trace"]
    fresh = ClusterView(connect=False, phase=0.0)
    fresh.apply(view.hello)
    assert set(fresh.gpu_colours()) == {IDLE}
    # Early in the step every lane is loading data, later it computes, at the end it updates.
    by_phase = {}
    for phase in (0.0, 0.3, 0.6, 0.999):
        fresh.phase = phase
        fresh.apply(step)
        by_phase[phase] = fresh.gpu_colours()
    meaning = {v: k for k, v in colours.items()}
    seen = {meaning.get(c) for cs in by_phase.values() for c in cs}
    assert {"forward", "backward"} & seen, seen
    assert len({tuple(cs) for cs in by_phase.values()}) >= 2  # the colours follow the step
    assert all(c in set(colours.values()) for cs in by_phase.values() for c in cs)
    assert set(KIND_MEANING.values()) <= set(colours)
    # A GPU that fails turns red; its replacement brings the step's colour back.
    fail = {"type": "event", "kind": "gpu_failed", "step": step["step"], "message": "x",
            "detail": {"gpu": 3}}  # fmt: skip
    fresh.apply(fail)
    assert fresh.gpu_colours()[3] == colours["failure"]
    fresh.apply({**fail, "kind": "gpu_replaced"})
    fresh.apply(step)
    assert fresh.gpu_colours()[3] != colours["failure"]


def test_the_loss_follows_the_live_steps(followed) -> None:
    _, view = followed
    n = len(view.losses)
    assert view.wait_for(lambda v: len(v.losses) > n, 30)
    last_step, last_loss = view.losses[-1]
    assert f"loss <b>{last_loss:.3f}</b> at step {last_step}" in view.loss_plot.value
    assert "<polyline" in view.loss_plot.value
    assert [s for s, _ in view.losses] == sorted(s for s, _ in view.losses)


def test_addresses_and_bad_ones() -> None:
    assert ws_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/ws"
    assert ws_url("https://example.org/x") == "wss://example.org/ws"
    assert ws_url("127.0.0.1:9000") == "ws://127.0.0.1:9000/ws"
    with pytest.raises(ValueError, match="not a server address"):
        ws_url("ftp://example.org")
