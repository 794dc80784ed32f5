"""A step frame stays small: the trace of the default 32-GPU step travels in compact form.

Before steps carried traces, a step frame of the default run (32 GPUs, a fixed list of six
phases and the ring's 32 hops) was 6,764 bytes without its probe. The trace replaces both
and must keep the frame within half as much again."""

from __future__ import annotations

from app.engine.config import RunConfig
from app.engine.trainer import Trainer
from app.protocol import StepFields

BEFORE_TRACES = 6_764


def test_default_step_frame_with_its_trace_stays_within_budget(tmp_path) -> None:
    config = RunConfig()
    assert config.gpus == 32
    t = Trainer(config, tmp_path)
    try:
        t.train_step()  # the first step carries a probe; compare a plain one
        report = t.train_step()
    finally:
        t.close(final_checkpoint=False)
    assert report.probe is None
    body = StepFields.model_validate(report).model_dump_json()
    assert '"trace"' in body and len(report.trace.rings[0].ring) == 32
    assert len(body) <= 1.5 * BEFORE_TRACES, len(body)
