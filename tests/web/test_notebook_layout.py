"""One source for where things sit: the notebook view's layout (app/notebook/layout.py) gives
the same positions as the page's own static/js/scene/layout.js, run in headless Chromium, for
clusters of several shapes."""

from __future__ import annotations

import pytest

from app.engine.cluster import build_topology
from app.engine.config import RunConfig
from app.notebook.layout import layout

SHAPES = [
    {"gpus": 8, "servers": 2},
    {"gpus": 32, "servers": 4},
    {"gpus": 64, "servers": 16, "leaves": 4, "spines": 3},
    {"gpus": 12, "servers": 2},  # six GPUs a board: three columns, two rows
    {"gpus": 4, "servers": 2, "leaves": 1, "spines": 1},  # two a board: one row
    {"gpus": 1, "servers": 1, "leaves": 1, "spines": 1},
    {"gpus": 24, "servers": 8, "leaves": 3, "spines": 2},
]

PAGE_LAYOUT = """async ([topologies, exploded]) => {
  const { layout } = await import('/static/js/scene/layout.js');
  const spec = await (await fetch('/api/scenes/training-run')).json();
  const pick = (l) => ({
    gpus: l.gpus.map((g) => ({ id: g.id, x: g.x, y: g.y, z: g.z })),
    servers: l.servers.map((s) => ({ id: s.id, x: s.x, y: s.y, z: s.z })),
    leaves: l.leaves.map((s) => ({ id: s.id, x: s.x, y: s.y, z: s.z })),
    spines: l.spines.map((s) => ({ id: s.id, x: s.x, y: s.y, z: s.z })),
    server: l.server,
  });
  return topologies.map((t) => pick(layout(spec, t, { exploded })));
}"""


@pytest.mark.parametrize("exploded", [False, True], ids=["resting", "exploded"])
def test_notebook_positions_are_the_pages(page_at, exploded) -> None:
    w = page_at()
    topologies = [
        build_topology(RunConfig(**shape, batch_size=shape["gpus"] * 4)).to_dict()
        for shape in SHAPES
    ]
    pages = w.page.evaluate(PAGE_LAYOUT, [topologies, exploded])
    for shape, topo, page in zip(SHAPES, topologies, pages, strict=True):
        ours = layout(topo, exploded=exploded)
        assert ours["server"] == pytest.approx(page["server"]), shape
        for key in ("gpus", "servers", "leaves", "spines"):
            assert len(ours[key]) == len(page[key]), (shape, key)
            for a, b in zip(sorted(ours[key], key=lambda p: p["id"]), page[key], strict=True):
                assert a["id"] == b["id"]
                got, want = (a["x"], a["y"], a["z"]), (b["x"], b["y"], b["z"])
                assert got == pytest.approx(want, abs=1e-9), (shape, key, a["id"])
    assert w.errors == []
