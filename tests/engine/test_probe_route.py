"""The probe's live routing: for a model with experts, where each layer's router sends the
prompt's last token ("a" of "Once upon a"), as the story's "inside a layer" chapter shows it.
"""

from __future__ import annotations

import numpy as np

from app.engine.config import RunConfig
from app.engine.trainer import Trainer
from app.protocol import ProbeMsg

SMALL = dict(checkpoint_every=0, batch_size=8, seed=3)


def test_each_layer_reports_its_top_k_experts_and_gates(tmp_path) -> None:
    t = Trainer(RunConfig(**SMALL, gpus=2, servers=1, n_layer=2, experts=8, top_k=2, ep=2),
                tmp_path, fresh=True)  # fmt: skip
    try:
        t.train_step()
        probe = t.probe()
        assert probe.route is not None and [r.layer for r in probe.route] == [0, 1]
        for r in probe.route:
            assert len(r.experts) == 2 and len(set(r.experts)) == 2
            assert all(0 <= e < 8 for e in r.experts)
            assert abs(sum(r.gates) - 1) < 1e-6 and r.gates[0] >= r.gates[1] > 0
        # It travels in the contract.
        msg = ProbeMsg.model_validate(probe).model_dump()
        assert msg["route"][0]["experts"] == probe.route[0].experts
    finally:
        t.close()


def test_the_route_is_the_routers_choice(tmp_path) -> None:
    """Make layer 0's choice certain: its second layer norm outputs ones for every token, and
    the router's column 5 scores a token twice as high as column 2; every other column 0."""
    t = Trainer(RunConfig(**SMALL, gpus=1, servers=1, n_layer=2, experts=8, top_k=2),
                tmp_path, fresh=True)  # fmt: skip
    try:
        whole, full = t.engine.sharded.whole_model()
        p = "layers.0."
        full[p + "ln2.g"][...] = 0.0
        full[p + "ln2.b"][...] = 1.0
        router = np.zeros_like(np.asarray(full[p + "moe.router"]))
        router[..., 5] = 0.02
        router[..., 2] = 0.01
        full[p + "moe.router"] = router.astype(full[p + "moe.router"].dtype)
        _, route = whole.probe_last(full, t._prompt_ids)
        experts, gates = route[0]
        assert experts == [5, 2]
        c = full[p + "ln2.b"].shape[-1]
        want = np.exp(0.02 * c) / (np.exp(0.02 * c) + np.exp(0.01 * c))
        assert abs(gates[0] - want) < 1e-5 and abs(sum(gates) - 1) < 1e-6
    finally:
        t.close()


def test_a_dense_model_has_no_route(tmp_path) -> None:
    t = Trainer(RunConfig(**SMALL, gpus=1, servers=1), tmp_path, fresh=True)
    try:
        assert t.probe().route is None
    finally:
        t.close()
