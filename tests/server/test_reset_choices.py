"""What a reset (or a page's own run) may choose beside the cluster and the plan: the batch and
the learning rate, within the settings table's bounds (app/options.py), checked by RunConfig's
own rules, and kept as the run's across a restart (the learning rate, like the seed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.engine.config import RunConfig
from app.protocol import RUN_FIELDS, OwnRunMsg, ResetControl
from app.run.controls import ControlError, reset_config


def reset(**kw):
    return ResetControl.model_validate({"action": "reset", **kw})


def test_a_reset_chooses_the_batch_and_the_learning_rate() -> None:
    assert {"seed", "preset", "batch_size", "lr"} <= set(RUN_FIELDS)
    base = RunConfig(gpus=8, servers=2, batch_size=64)
    got = reset_config(base, reset(lr=0.01, batch_size=32))
    assert (got.lr, got.batch_size, got.gpus) == (0.01, 32, 8)
    # Unnamed, they stay; a new cluster picks a batch that shares out over it.
    assert reset_config(base, reset(seed=3)).lr == base.lr
    assert reset_config(base, reset(gpus=3, servers=1)).batch_size % 3 == 0
    # Named with the cluster, the batch asked for wins, or the rule it breaks is said.
    assert reset_config(base, reset(gpus=4, servers=1, batch_size=12)).batch_size == 12
    with pytest.raises(ControlError) as bad:
        reset_config(base, reset(batch_size=100))
    assert bad.value.code == "bad_config" and "batch" in bad.value.message
    # A page's own run takes the same choices.
    own = OwnRunMsg.model_validate({"type": "own_run", "key": "k" * 16, "lr": 0.001})
    assert reset_config(base, own).lr == 0.001


@pytest.mark.parametrize("bad", [{"lr": 0}, {"lr": 2.0}, {"lr": "fast"}, {"batch_size": 0},
                                 {"batch_size": 4096}, {"batch_size": 1.5}])  # fmt: skip
def test_out_of_bounds_choices_are_refused_at_the_edge(bad) -> None:
    with pytest.raises(ValidationError):
        reset(**bad)


def test_a_restart_keeps_the_learning_rate_a_reset_chose(tmp_path) -> None:
    """The server restarts with its own settings; the run it takes up keeps the learning rate
    a reset gave it (as it keeps its seed), unless the command line names one again."""
    from dataclasses import replace

    from inproc import options

    from app.run.choice import choose_run
    from app.run.history import History

    history = History(tmp_path / "runs.sqlite")
    try:
        opts = options(tmp_path)
        config, run_id, fresh = choose_run(opts, history)
        assert fresh
        history.start_run("after-reset", config.with_(lr=0.01).to_dict())
        kept, again, fresh = choose_run(opts, history)
        assert (again, fresh, kept.lr) == ("after-reset", False, 0.01)
        named = replace(opts, explicit=frozenset({"lr"}))
        other, new_id, fresh = choose_run(named, history)
        assert fresh and new_id != "after-reset" and other.lr == opts.config.lr
    finally:
        history.close()
