"""Writes the engine's own numbers for the browser modules' Node tests (tests/js/fixtures/).

The Node tests check the page's pure modules against the Python side: the scene layout
against app/notebook/layout.py (the same rules, ported), the trace reader against
app/engine/trace.py `expand` on real steps of the engine, the roles the scene works out
against app/engine/plan.py. Node cannot run the engine, so this writes what it gives:

    .venv/bin/python tests/js/make_fixtures.py

tests/test_browser_modules.py fails when the files here are not what this would write now
(the engine changed and the fixtures were not made again).

Measured wall times vary from run to run, so each record's `wall_s` is replaced by a fixed
value (1 ms, 2 ms, ... in record order) before the trace is expanded: the files stay the
same from one run to the next and still show that the reader carries the field through.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Cluster shapes for the layout: the notebook's parity test's, and a few more.
SHAPES: list[dict[str, int]] = [
    {"gpus": 8, "servers": 2},
    {"gpus": 32, "servers": 4},
    {"gpus": 64, "servers": 16, "leaves": 4, "spines": 3},
    {"gpus": 12, "servers": 2},  # six GPUs a board: three columns, two rows
    {"gpus": 4, "servers": 2, "leaves": 1, "spines": 1},  # two a board: one row
    {"gpus": 1, "servers": 1, "leaves": 1, "spines": 1},
    {"gpus": 24, "servers": 8, "leaves": 3, "spines": 2},
    {"gpus": 256, "servers": 32},
]

# Steps of real runs, one each: (name, RunConfig fields, faults injected before the step).
# The model is small (MODEL) so making them takes a second; the step's lanes have the same
# shape at any size, only their durations differ.
MODEL: dict[str, Any] = {"n_embd": 32, "block_size": 8, "corpus_stories": 200}
STEPS: list[tuple[str, dict[str, Any], list[tuple[str, int]]]] = [
    ("dp8_checkpoint", {"gpus": 8, "servers": 2, "batch_size": 32, "checkpoint_every": 1}, []),
    (
        "dp8_straggler_link",
        {"gpus": 8, "servers": 2, "batch_size": 32, "checkpoint_every": 0},
        [("straggler", 3), ("link", 5)],
    ),
    (
        "dp2_tp2_pp2",
        {"gpus": 8, "servers": 2, "tp": 2, "pp": 2, "microbatches": 4, "batch_size": 32},
        [],
    ),
    (
        "gpipe_pp4_moe",
        {
            "gpus": 8,
            "servers": 2,
            "pp": 4,
            "n_layer": 4,
            "microbatches": 8,
            "batch_size": 32,
            "schedule": "gpipe",
            "experts": 4,
            "ep": 2,
        },
        [],
    ),  # fmt: skip
    (
        "1f1b_pp4_16",
        {
            "gpus": 16,
            "servers": 2,
            "pp": 4,
            "n_layer": 4,
            "microbatches": 8,
            "batch_size": 64,
            "schedule": "1f1b",
        },
        [],
    ),  # fmt: skip
]

# Plans for the roles: (gpus, gpus per server, tp, pp, ep).
PLANS: list[tuple[int, int, int, int, int]] = [
    (8, 4, 1, 1, 1),
    (8, 4, 2, 2, 1),
    (8, 4, 1, 4, 2),
    (16, 8, 2, 2, 2),
    (16, 8, 4, 1, 4),
    (12, 6, 3, 2, 1),
]


def _fixed_walls(trace: Any) -> None:
    n = 0
    for rec in [*trace.spans, *trace.rings]:
        if rec.wall_s is not None:
            n += 1
            rec.wall_s = n / 1000


def traces() -> dict[str, Any]:
    from app.engine.config import RunConfig
    from app.engine.trace import expand, lane_sums
    from app.engine.trainer import Trainer
    from app.protocol import TraceMsg, trace_kinds

    steps = {}
    for name, fields, faults in STEPS:
        cfg = RunConfig(**{"checkpoint_every": 0, **MODEL, **fields})
        with tempfile.TemporaryDirectory() as d:
            trainer = Trainer(cfg, d, fresh=True)
            for kind, target in faults:
                trainer.inject(kind, target)
            trace = trainer.train_step().trace
        _fixed_walls(trace)
        compact = TraceMsg.model_validate(asdict(trace)).model_dump(mode="json")
        lanes = [
            [{k: v for k, v in vars(e).items() if v is not None} for e in lane]
            for lane in expand(trace)
        ]
        steps[name] = {
            "config": fields,
            "faults": faults,
            "compact": compact,
            "lanes": lanes,
            "lane_sums": lane_sums(trace),  # seconds per time-bar group, lane by lane
        }
    return {"kinds": [k.model_dump() for k in trace_kinds()], "steps": steps}


def layouts() -> dict[str, Any]:
    from app.engine.cluster import build_topology
    from app.engine.config import RunConfig
    from app.notebook.layout import layout
    from app.scenes import load_scene

    spec = json.loads(load_scene("training-run").model_dump_json())
    cases = []
    for shape in SHAPES:
        topo = build_topology(RunConfig(**shape, batch_size=shape["gpus"] * 4)).to_dict()
        python = {}
        for exploded in (False, True):
            lay = layout(topo, exploded=exploded)
            python["exploded" if exploded else "resting"] = {
                "server": lay["server"],
                **{
                    key: sorted(
                        ({"id": p["id"], "x": p["x"], "y": p["y"], "z": p["z"]} for p in lay[key]),
                        key=lambda p: p["id"],
                    )
                    for key in ("gpus", "servers", "leaves", "spines")
                },
            }
        cases.append({"shape": shape, "topology": topo, "python": python})
    scene = {
        "parts": [{"id": p["id"], "anchor": p.get("anchor")} for p in spec["parts"]],
        "colours": spec.get("colours"),
        "background": spec.get("background"),
        "placeholders": sorted(spec["placeholders"]),
    }
    return {"scene": scene, "cases": cases}


def plans() -> dict[str, Any]:
    from app.engine.plan import Plan

    out = []
    for gpus, per, tp, pp, ep in PLANS:
        plan = Plan(gpus=gpus, gpus_per_server=per, tp=tp, pp=pp, ep=ep)
        coords = [[*plan.coords(g), plan.ep_rank(g)] for g in range(gpus)]
        out.append(
            {
                "plan": plan.to_dict(),
                "gpus": gpus,
                "coords": coords,  # [dp rank, stage, tensor rank, expert rank] per GPU
                "tp_groups": plan.tp_groups,
                "pipelines": plan.pipelines,
            }
        )
    return {"plans": out}


def build() -> dict[str, str]:
    """File name -> the text it should hold."""
    made = {"traces.json": traces(), "layouts.json": layouts(), "plans.json": plans()}
    return {name: json.dumps(data, separators=(",", ":")) + "\n" for name, data in made.items()}


def main() -> int:
    FIXTURES.mkdir(exist_ok=True)
    for name, text in build().items():
        (FIXTURES / name).write_text(text, encoding="utf-8")
        print(f"wrote {FIXTURES.relative_to(ROOT) / name} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
