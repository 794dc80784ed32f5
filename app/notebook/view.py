"""`ClusterView(url)`: the live training cluster as a pythreejs scene in Jupyter.

    from app.notebook import ClusterView
    view = ClusterView("http://127.0.0.1:8000")
    view            # servers, GPUs and the leaf / spine switches, coloured by the live step

It reads the same websocket the page does (`/ws`): `hello` places servers, GPUs and switches
by the page's layout rules (layout.py), and each `step` re-colours every GPU by the work its
lane of the step's trace is doing (forward amber, backward pink, all-reduce blue, ... in the
scene data's colours, the page's), and adds the step's loss to the loss line under the scene.
A failed GPU is red until it is replaced. `apply(message)` is the whole of it, so a test (or
a recorded run) can drive the view without a server.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import ipywidgets as widgets
import pythreejs as p3

from app.engine.trace import expand, trace_from_dict
from app.paths import SCENES_DIR

from .layout import DIMS, layout

# What colour each kind of trace event is drawn in: the page's table (scene/palette.js
# KIND_MEANING), over the meanings of scenes/training-run.json "colours".
KIND_MEANING = {
    "data": "data",
    "forward": "forward",
    "backward": "backward",
    "optimizer": "update",
    "allreduce": "allreduce",
    "allreduce_hidden": "allreduce",
    "allreduce_wait": "waiting",
}
IDLE = "#3B4A63"  # a GPU with nothing to do: the page's quiet board colour
SERVER = "#26324A"
SWITCH = "#34425E"
UPDATE = "#D8C38F"  # the optimizer's sand (palette.js `update`; not a scene-data meaning)
LOSS_POINTS = 2000


def meaning_colours(scene: str = "training-run") -> dict[str, str]:
    """{meaning: colour} from the scene data, the one table the page reads too."""
    spec = json.loads((SCENES_DIR / f"{scene}.json").read_text())
    colours = {k: v["default"] for k, v in spec.get("colours", {}).items()}
    colours.setdefault("update", UPDATE)
    return colours


def ws_url(url: str) -> str:
    """http://host:port[/...] -> ws://host:port/ws (https -> wss)."""
    parts = urlsplit(url if "//" in url else f"http://{url}")
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None:
        raise ValueError(f"not a server address: {url!r}")
    return urlunsplit((scheme, parts.netloc, "/ws", "", ""))


class ClusterView:
    """The cluster of a running `trainingrun` server, drawn with pythreejs.

    `connect=False` builds nothing until messages are given to `apply` (tests, replays)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        connect: bool = True,
        width: int = 720,
        height: int = 420,
        phase: float = 0.5,
    ) -> None:
        self.url = url
        self.colours = meaning_colours()
        self.phase = phase  # how far into each step's lanes the GPUs' colours are read
        self.scene = p3.Scene(background="#0B1220", children=[p3.AmbientLight(intensity=0.7)])
        light = p3.DirectionalLight(position=[10, 20, 15], intensity=0.8)
        self.camera = p3.PerspectiveCamera(position=[0, 14, 30], fov=40, aspect=width / height)
        self.scene.add(light)
        self.renderer = p3.Renderer(
            camera=self.camera,
            scene=self.scene,
            controls=[p3.OrbitControls(controlling=self.camera)],
            width=width,
            height=height,
        )
        self.status = widgets.HTML(value="<b>Training Run</b>: waiting for the server…")
        self.loss_plot = widgets.HTML(value="")
        self.widget = widgets.VBox([self.status, self.renderer, self.loss_plot])
        self.group = p3.Group()
        self.scene.add(self.group)
        self.gpus: list[p3.Mesh] = []
        self.servers: list[p3.Mesh] = []
        self.leaves: list[p3.Mesh] = []
        self.spines: list[p3.Mesh] = []
        self.positions: dict[str, list[dict[str, Any]]] = {}
        self.hello: dict[str, Any] | None = None
        self.step: dict[str, Any] | None = None
        self.losses: list[tuple[int, float]] = []
        self.failed: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if url is not None and connect:
            self.start()

    # ---- Jupyter --------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ---- the scene ------------------------------------------------------------------------
    def _build(self, topology: dict[str, Any]) -> None:
        self.group.children = []
        where = layout(topology)
        self.positions = where
        srv = where["server"]
        gw, gh, gd = DIMS["gpu"]
        lw, lh, ld = DIMS["leaf"]
        sw, sh, sd = DIMS["spine"]

        def box(w: float, h: float, d: float, colour: str, p: dict[str, Any], name: str):
            mesh = p3.Mesh(
                p3.BoxGeometry(width=w, height=h, depth=d),
                p3.MeshStandardMaterial(color=colour),
                position=[p["x"], p["y"], p["z"]],
                name=name,
            )
            return mesh

        self.servers = [
            box(srv["w"], srv["h"], srv["d"], SERVER, s, f"server {s['id']}")
            for s in where["servers"]
        ]
        self.gpus = [box(gw, gh, gd, IDLE, g, f"GPU {g['id']}") for g in where["gpus"]]
        self.leaves = [box(lw, lh, ld, SWITCH, x, f"leaf {x['id']}") for x in where["leaves"]]
        self.spines = [box(sw, sh, sd, SWITCH, x, f"spine {x['id']}") for x in where["spines"]]
        self.group.children = tuple(self.servers + self.gpus + self.leaves + self.spines)
        xs = [s["x"] for s in where["servers"]] or [0.0]
        mid = (min(xs) + max(xs)) / 2
        self.group.position = [-mid, 0, 0]
        span = max(xs) - min(xs) + srv["w"]
        self.camera.position = [0, 8 + span * 0.25, 12 + span * 0.9]
        self.camera.lookAt([0, 4, 0])

    def gpu_colours(self) -> list[str]:
        return [m.material.color for m in self.gpus]

    def _colour_step(self, msg: dict[str, Any]) -> None:
        trace = msg.get("trace")
        kinds: list[str | None] = [None] * len(self.gpus)
        if trace:
            t = trace_from_dict(trace)
            for g, lane in enumerate(expand(t)[: len(self.gpus)]):
                at = self.phase * t.step_s
                for e in lane:
                    if e.t0 <= at < e.t0 + e.dur and e.kind in KIND_MEANING:
                        kinds[g] = e.kind
                        if e.kind != "allreduce_hidden":
                            break
        for g, mesh in enumerate(self.gpus):
            if g in self.failed:
                colour = self.colours["failure"]
            elif kinds[g] is None:
                colour = IDLE
            else:
                colour = self.colours[KIND_MEANING[kinds[g]]]
            mesh.material.color = colour

    def _draw_loss(self) -> None:
        pts = self.losses[-LOSS_POINTS:]
        if not pts:
            return
        w, h = 480, 90
        lo = min(v for _, v in pts)
        hi = max(v for _, v in pts)
        s0, s1 = pts[0][0], pts[-1][0]
        xs = [(s - s0) / max(1, s1 - s0) * (w - 10) + 5 for s, _ in pts]
        ys = [h - 5 - (v - lo) / ((hi - lo) or 1) * (h - 10) for _, v in pts]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
        step, loss = pts[-1]
        self.loss_plot.value = (
            f'<div style="font:14px sans-serif">loss <b>{loss:.3f}</b> at step {step} '
            f"(real, every step)</div>"
            f'<svg width="{w}" height="{h}" style="background:#0B1220">'
            f'<polyline fill="none" stroke="#E8EEF8" stroke-width="1.5" points="{line}"/></svg>'
        )

    # ---- messages -------------------------------------------------------------------------
    def apply(self, msg: dict[str, Any]) -> None:
        """Take one server message (hello, snapshot, step, event) as the page's store does."""
        kind = msg.get("type")
        if kind == "hello":
            self.hello = msg
            self.failed = set()
            self._build(msg["topology"])
            cfg = msg.get("config", {})
            self.status.value = (
                f"<b>Training Run</b> {msg.get('run_id', '')}: {len(self.gpus)} GPUs on "
                f"{len(self.servers)} servers, {len(self.leaves)} leaf and {len(self.spines)} "
                f"spine switches · preset {cfg.get('preset', '?')}"
            )
        elif kind == "snapshot":
            self.losses = [(int(p["step"]), float(p["loss"])) for p in msg.get("history", [])]
            if msg.get("last_step"):
                self.step = msg["last_step"]
                self._colour_step(self.step)
            self._draw_loss()
        elif kind == "step":
            self.step = msg
            for e in msg.get("events", []):
                self._event(e)
            if self.losses and msg["step"] <= self.losses[-1][0]:
                self.losses = [p for p in self.losses if p[0] < msg["step"]]  # a rollback
            self.losses.append((int(msg["step"]), float(msg["loss"])))
            self._colour_step(msg)
            self._draw_loss()
        elif kind == "event":
            self._event(msg)

    def _event(self, e: dict[str, Any]) -> None:
        gpu = (e.get("detail") or {}).get("gpu")
        if e.get("kind") == "gpu_failed" and gpu is not None:
            self.failed.add(int(gpu))
            if 0 <= gpu < len(self.gpus):
                self.gpus[gpu].material.color = self.colours["failure"]
        elif e.get("kind") == "gpu_replaced" and gpu is not None:
            self.failed.discard(int(gpu))

    # ---- the websocket --------------------------------------------------------------------
    def start(self) -> None:
        """Follow the server in a background thread (reconnecting until `close`)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._follow, name="cluster-view", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        from websockets.sync.client import connect

        assert self.url is not None
        url = ws_url(self.url)
        origin = url.replace("ws", "http", 1).rsplit("/ws", 1)[0]
        delay = 0.5
        while not self._stop.is_set():
            try:
                with connect(url, origin=origin, open_timeout=5, max_size=2**24) as ws:
                    delay = 0.5
                    while not self._stop.is_set():
                        try:
                            text = ws.recv(timeout=0.5)
                        except TimeoutError:
                            continue
                        self.apply(json.loads(text))
            except Exception as exc:  # the server away: say so, try again
                self.status.value = f"<b>Training Run</b>: not connected ({exc.__class__.__name__})"
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def wait_for(self, predicate, timeout: float = 30.0) -> bool:
        """Wait until predicate(view) holds (for scripts and tests); False on timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(self):
                return True
            time.sleep(0.05)
        return False
