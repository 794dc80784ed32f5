"""Where the notebook view puts servers, GPUs and switches: the page's layout rules
(static/js/scene/layout.js), ported for the parts the notebook draws.

The numbers and the rules are the page's; tests/notebook/test_layout_parity.py runs the page's
own layout.js in headless Chromium on the same topologies and checks every position here
against it, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import math
from typing import Any

# static/js/scene/layout.js DIMS (the entries this port uses).
DIMS = {
    "gpu": (0.9, 0.55, 0.9),
    "gpuPitch": (1.15, 1.2),
    "chassisH": 0.35,
    "serverGap": 0.6,
    "leafGap": 1.8,
    "leaf": (3.0, 0.45, 1.1),
    "spine": (3.6, 0.5, 1.3),
    "leafY": 6.6,
    "spineY": 11.4,
    "explodeLift": 1.6,
}


def _round(v: float) -> float:
    """layout.js's round(): Math.round(v * 1000) / 1000 (halves go up, as in JavaScript)."""
    return math.floor(v * 1000 + 0.5) / 1000


def board_grid(per_server: int) -> tuple[int, int]:
    """(columns, rows) of GPUs on one server board: two rows when there are four or more."""
    rows = 2 if per_server >= 4 else 1
    return math.ceil(per_server / rows), rows


def layout(topology: dict[str, Any], exploded: bool = False) -> dict[str, Any]:
    """{"servers", "gpus", "leaves", "spines": [{id, x, y, z, ...}], "server": {w, d, h}}
    for a topology as the server's hello sends it."""
    gpus = topology.get("gpus") or []
    servers = topology.get("servers") or []
    leaves = topology.get("leaves") or []
    spines = topology.get("spines") or []
    per_server = max(1, len(servers[0]["gpus"]) if servers else 1)
    cols, rows = board_grid(per_server)
    px, pz = DIMS["gpuPitch"]
    server_w = cols * px + 0.5
    server_d = rows * pz + 0.6
    lift = DIMS["explodeLift"] if exploded else 0.0

    server_pos: dict[int, dict[str, Any]] = {}
    leaf_pos: list[dict[str, Any]] = []
    x = 0.0
    groups = leaves or [{"id": 0, "servers": [s["id"] for s in servers]}]
    for leaf in groups:
        ids = list(leaf["servers"])
        n_cols = max(1, min(len(ids), math.ceil(math.sqrt(len(ids) * 1.5))))
        n_rows = max(1, math.ceil(len(ids) / n_cols))
        group_w = n_cols * server_w + (n_cols - 1) * DIMS["serverGap"]
        for i, sid in enumerate(ids):
            c, r = i % n_cols, i // n_cols
            sx = x + c * (server_w + DIMS["serverGap"]) + server_w / 2
            sz = -r * (server_d + 0.9)
            server_pos[sid] = {
                "id": sid,
                "leaf": leaf["id"],
                "x": sx,
                "y": DIMS["chassisH"] / 2,
                "z": sz,
            }
        z_mid = -((n_rows - 1) * (server_d + 0.9)) / 2
        if ids:
            leaf_pos.append(
                {"id": leaf["id"], "x": x + group_w / 2, "y": DIMS["leafY"] + lift, "z": z_mid}
            )
            x += group_w + DIMS["leafGap"]
    cluster_min = 0.0
    cluster_max = max(server_w, x - DIMS["leafGap"])
    cluster_mid = (cluster_min + cluster_max) / 2

    out: dict[str, Any] = {
        "server": {"w": server_w, "d": server_d, "h": DIMS["chassisH"]},
        "servers": [],
        "gpus": [],
        "leaves": [],
        "spines": [],
    }
    for sid in sorted(server_pos):
        s = server_pos[sid]
        out["servers"].append({**s, "x": _round(s["x"]), "z": _round(s["z"])})
    gpu_top = DIMS["chassisH"] + DIMS["gpu"][1] / 2
    for g in gpus:
        s = server_pos[g["server"]]
        r = g["local"] // cols
        c = g["local"] % cols if r % 2 == 0 else cols - 1 - (g["local"] % cols)
        gx = s["x"] - ((cols - 1) * px) / 2 + c * px
        gz = s["z"] + ((rows - 1) * pz) / 2 - r * pz + 0.15
        out["gpus"].append(
            {
                "id": g["id"],
                "server": g["server"],
                "x": _round(gx),
                "y": _round(gpu_top),
                "z": _round(gz),
            }
        )
    spine_y = DIMS["spineY"] + 2 * lift
    span = max(cluster_max - cluster_min, 6)
    z_all = sum(p["z"] for p in leaf_pos) / len(leaf_pos) if leaf_pos else 0.0
    n = len(spines)
    for i, sp in enumerate(spines):
        sx = cluster_mid + ((i / (n - 1) - 0.5) * span * 0.55 if n > 1 else 0)
        out["spines"].append(
            {"id": sp["id"], "x": _round(sx), "y": spine_y, "z": _round(z_all - 0.5)}
        )
    for p in leaf_pos:
        out["leaves"].append({**p, "x": _round(p["x"]), "z": _round(p["z"])})
    return out
