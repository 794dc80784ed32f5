"""The scene layout is a pure function of the scene spec and the cluster topology.

It runs in a real browser page with no WebGL and no import map (so importing it proves it
needs no three.js), on topologies built by the engine itself.
"""

from __future__ import annotations

import json

import pytest

from app.engine.cluster import build_topology
from app.engine.config import RunConfig
from app.scenes import load_scene

LAYOUT_JS = """async ([topo, spec, opts]) => {
  const m = await import('/static/js/scene/layout.js');
  return m.layout(spec, topo, opts);
}"""


@pytest.fixture
def plain_page(browser, server):
    # A JSON page of the app: same origin for the module import, no import map, no WebGL use.
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server.url}/api/health")
    yield page
    ctx.close()


def _lay(page, gpus: int, servers: int, **opts):
    topo = build_topology(RunConfig(gpus=gpus, servers=servers, batch_size=gpus)).to_dict()
    spec = json.loads(load_scene("training-run").model_dump_json())
    return topo, page.evaluate(LAYOUT_JS, [topo, spec, opts])


def _overlap(a: dict, b: dict, w: float, d: float) -> bool:
    return abs(a["x"] - b["x"]) < w and abs(a["z"] - b["z"]) < d


@pytest.mark.parametrize(("gpus", "servers"), [(8, 2), (32, 4), (256, 32)])
def test_every_gpu_server_and_switch_has_its_own_place(plain_page, gpus, servers) -> None:
    topo, lay = _lay(plain_page, gpus, servers)
    assert len(lay["gpus"]) == gpus and len(lay["servers"]) == servers
    assert len(lay["leaves"]) == len(topo["leaves"]) and len(lay["spines"]) == len(topo["spines"])
    spots = {(g["x"], g["y"], g["z"]) for g in lay["gpus"]}
    assert len(spots) == gpus
    w, d = lay["server"]["w"], lay["server"]["d"]
    srv = lay["servers"]
    for i in range(len(srv)):
        for j in range(i + 1, len(srv)):
            assert not _overlap(srv[i], srv[j], w, d), (srv[i], srv[j])
    # Each GPU sits on its own server's board.
    by_id = {s["id"]: s for s in srv}
    for g in lay["gpus"]:
        s = by_id[g["server"]]
        assert abs(g["x"] - s["x"]) < w / 2 and abs(g["z"] - s["z"]) < d / 2


def test_data_flows_left_to_right_and_fabric_stacks_above(plain_page) -> None:
    _, lay = _lay(plain_page, 32, 4)
    p = lay["parts"]
    assert p["datalake"]["max"][0] < p["loaders"]["min"][0] < p["gpus"]["min"][0]
    assert p["gpus"]["max"][0] < p["checkpoints"]["min"][0]
    top_of_racks = p["gpus"]["max"][1]
    assert all(leaf["y"] > top_of_racks for leaf in lay["leaves"])
    assert min(s["y"] for s in lay["spines"]) > max(leaf["y"] for leaf in lay["leaves"])
    # The model panel floats clear of the racks: no horizontal overlap with the GPUs.
    assert p["model"]["min"][0] > p["gpus"]["max"][0]


def test_ring_paths_follow_the_real_links(plain_page) -> None:
    topo, lay = _lay(plain_page, 32, 4)
    leaves = {leaf["id"]: leaf for leaf in lay["leaves"]}
    spines = {s["id"]: s for s in lay["spines"]}
    kinds = [r["kind"] for r in lay["ringPaths"]]
    assert kinds == [r["kind"] for r in topo["ring_links"]]
    assert {"nvlink", "leaf", "spine"} <= set(kinds)
    for link, path in zip(topo["ring_links"], lay["ringPaths"], strict=True):
        pts = [tuple(p) for p in path["points"]]
        assert path["length"] > 0
        for hop in link["path"]:
            kind, ident = hop.split(":")
            if kind == "leaf":
                sw = leaves[int(ident)]
            elif kind == "spine":
                sw = spines[int(ident)]
            else:
                continue
            assert (sw["x"], sw["y"], sw["z"]) in pts, (link, pts)
        if link["kind"] == "nvlink":
            assert max(p[1] for p in pts) < min(leaf["y"] for leaf in leaves.values())


def test_anchors_for_all_seven_parts_and_explode_lifts_the_fabric(plain_page) -> None:
    _, lay = _lay(plain_page, 16, 4)
    assert sorted(lay["anchors"]) == sorted(
        ["datalake", "loaders", "gpus", "fabric", "ring", "model", "checkpoints"]
    )
    _, exploded = _lay(plain_page, 16, 4, exploded=True)
    assert exploded["leaves"][0]["y"] > lay["leaves"][0]["y"]
    assert exploded["spines"][0]["y"] - exploded["leaves"][0]["y"] > (
        lay["spines"][0]["y"] - lay["leaves"][0]["y"]
    )
    # Loader count and prefetch depth come from the run's config.
    _, more = _lay(plain_page, 16, 4, loaders=3, prefetch=5)
    assert len(more["loaders"]) == 3 and len(more["slots"]) == 15
