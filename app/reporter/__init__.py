"""Show a real torch.distributed job on a `trainingrun watch` server: `Reporter` (see
app/reporter/reporter.py and docs/attach.md). Importing this package needs no torch."""

from app.reporter.reporter import Reporter, StepTimer

__all__ = ["Reporter", "StepTimer"]
