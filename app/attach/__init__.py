"""Show a real torch.distributed job on a `trainingrun watch` server: `Reporter` (see
app/attach/reporter.py and docs/attach.md). Importing this package needs no torch."""

from app.attach.reporter import Reporter, StepTimer

__all__ = ["Reporter", "StepTimer"]
