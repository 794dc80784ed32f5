"""The simulated cluster: servers, leaves, spines, and a ring that crosses every kind of link."""

from __future__ import annotations

import pytest

from app.engine.cluster import build_topology
from app.engine.config import RunConfig


def test_default_cluster_crosses_every_kind_of_link():
    cfg = RunConfig()
    topo = build_topology(cfg)
    assert cfg.servers >= 2 and cfg.leaves >= 2 and cfg.spines >= 2
    assert topo.n_gpus == cfg.gpus == cfg.servers * cfg.gpus_per_server
    assert {l.kind for l in topo.ring_links} == {"nvlink", "leaf", "spine"}
    assert topo.ring == list(range(cfg.gpus))
    for link in topo.ring_links:
        if link.kind == "spine":
            assert link.path[0].startswith("leaf:") and link.path[1].startswith("spine:")


def test_every_leaf_has_servers_and_every_spine_every_leaf():
    topo = build_topology(RunConfig(gpus=16, servers=4))
    assert all(leaf.servers for leaf in topo.leaves)
    assert all(s.leaves == [0, 1] for s in topo.spines)
    assert [g.server for g in topo.gpus] == [i // 4 for i in range(16)]


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="divide evenly"):
        RunConfig(gpus=10, servers=4, batch_size=40)
    with pytest.raises(ValueError, match="multiple of gpus"):
        RunConfig(gpus=8, servers=2, batch_size=12)
