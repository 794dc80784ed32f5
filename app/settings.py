"""Server settings: the table of settings (app/options.py) with what the server makes of it.

`Settings` is what `create_app` takes. Its fields, their bounds, defaults, options and
TRAININGRUN_* variables are the table's; this adds the checks that need the web edge (host
names) and turns the values into the runner's plain options.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator

from app.engine.config import RunConfig
from app.options import Options, config_values
from app.run.choice import RunnerOptions
from app.web.hosts import host_entry, is_loopback


class Settings(Options):
    """The server's settings: the table's, and what the server makes of them."""

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, v: list[str]) -> list[str]:
        # Names or addresses the server answers to besides loopback and `host`: a request
        # for any other Host is refused, which defeats DNS rebinding.
        return [host_entry(h) for h in v]

    @property
    def is_public(self) -> bool:
        return self.public if self.public is not None else not is_loopback(self.host)

    @property
    def effective_batch_size(self) -> int:
        return RunConfig.batch_for(self.gpus, self.batch_size)

    def run_config(self) -> RunConfig:
        values = config_values(type(self), dict(self))
        return RunConfig(**values | {"batch_size": self.effective_batch_size})

    def runner_options(self) -> RunnerOptions:
        """What the runner needs, as plain values: it never sees these settings."""
        # RunConfig's names for the settings given rather than defaulted.
        named = config_values(type(self), dict.fromkeys(self.model_fields_set))
        return RunnerOptions(
            run_dir=self.run_dir,
            config=self.run_config(),
            explicit=frozenset(named),
            fresh=self.fresh,
            speed=self.speed,
            paused=self.paused,
            lesson_interval_s=self.lesson_interval_s,
            rest_after_s=self.rest_after_s,
        )

    @property
    def db_path(self) -> Path:
        return self.run_dir / "runs.sqlite"
