"""The simulated cluster: servers of GPUs, leaf and spine switches, and the ring through them.

Wiring is top-of-rack style: each server hangs off one leaf switch (servers are dealt to
leaves in contiguous blocks) and every leaf connects to every spine. GPUs inside a server
talk over NVLink. A hop between two servers on the same leaf goes server -> leaf -> server;
between servers on different leaves it climbs leaf -> spine -> leaf. With the default
4 servers on 2 leaves the ring crosses all three kinds of link.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .config import RunConfig


@dataclass
class GpuInfo:
    id: int  # global index, also its place in the ring
    server: int
    local: int  # index inside its server
    leaf: int


@dataclass
class ServerInfo:
    id: int
    leaf: int
    gpus: list[int]


@dataclass
class LeafInfo:
    id: int
    servers: list[int]
    spines: list[int]  # every leaf is wired to every spine


@dataclass
class SpineInfo:
    id: int
    leaves: list[int]


@dataclass
class RingLink:
    src: int
    dst: int
    kind: str  # "nvlink" | "leaf" | "spine"
    # switches the hop passes through, in order, e.g. ["leaf:0", "spine:1", "leaf:1"]
    path: list[str] = field(default_factory=list)


@dataclass
class Topology:
    gpus: list[GpuInfo]
    servers: list[ServerInfo]
    leaves: list[LeafInfo]
    spines: list[SpineInfo]
    ring: list[int]  # GPU ids in ring order
    ring_links: list[RingLink]  # ring[i] -> ring[i+1], wrapping

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    def link_kind(self, src: int, dst: int) -> str:
        a, b = self.gpus[src], self.gpus[dst]
        if a.server == b.server:
            return "nvlink"
        if a.leaf == b.leaf:
            return "leaf"
        return "spine"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def leaf_of_server(server: int, servers: int, leaves: int) -> int:
    """Deal servers to leaves in contiguous blocks (as racks sit under a top-of-rack switch)."""
    used = min(leaves, servers)
    return server * used // servers


def build_topology(config: RunConfig) -> Topology:
    per = config.gpus_per_server
    servers: list[ServerInfo] = []
    gpus: list[GpuInfo] = []
    for s in range(config.servers):
        leaf = leaf_of_server(s, config.servers, config.leaves)
        ids = list(range(s * per, (s + 1) * per))
        servers.append(ServerInfo(id=s, leaf=leaf, gpus=ids))
        gpus.extend(GpuInfo(id=g, server=s, local=g - s * per, leaf=leaf) for g in ids)
    spines = list(range(config.spines))
    leaves = [
        LeafInfo(id=l_, servers=[s.id for s in servers if s.leaf == l_], spines=spines)
        for l_ in range(config.leaves)
    ]
    spine_infos = [SpineInfo(id=s, leaves=list(range(config.leaves))) for s in spines]
    ring = list(range(config.gpus))
    topo = Topology(gpus, servers, leaves, spine_infos, ring, [])
    links = []
    for i, src in enumerate(ring):
        dst = ring[(i + 1) % len(ring)]
        kind = topo.link_kind(src, dst)
        a, b = gpus[src], gpus[dst]
        if kind == "nvlink":
            path = [f"server:{a.server}"]
        elif kind == "leaf":
            path = [f"leaf:{a.leaf}"]
        else:
            # Spread inter-leaf hops over the spines so no single spine carries them all.
            spine = i % config.spines
            path = [f"leaf:{a.leaf}", f"spine:{spine}", f"leaf:{b.leaf}"]
        links.append(RingLink(src=src, dst=dst, kind=kind, path=path))
    topo.ring_links = links
    return topo
