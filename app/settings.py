"""Server settings: command-line options and TRAININGRUN_* environment variables in one place.

`Settings` is what `create_app` takes. Anything not given on the command line can come
from the environment (for example TRAININGRUN_PORT=9000 or TRAININGRUN_TOKEN=...).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.engine.config import RunConfig
from app.protocol import parse_speed
from app.run.choice import RunnerOptions
from app.web.hosts import host_entry, is_loopback


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRAININGRUN_", extra="ignore")

    # Where to listen. Loopback by default: nobody else on the network can reach the run.
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # Data lake, checkpoints and runs.sqlite live here.
    run_dir: Path = Path("runs/default")
    fresh: bool = False
    open_browser: bool = False
    # Presenter token: needed to control the run when the server is public.
    token: str | None = Field(default=None, min_length=8, max_length=256)
    # None: public exactly when `host` is not a loopback address.
    public: bool | None = None
    # Browser origins allowed on /ws besides the server's own (e.g. "http://example:8000").
    allowed_origins: list[str] = Field(default_factory=list)
    # Names or addresses the server answers to besides loopback and `host` (a wildcard host
    # names none): a request for any other Host is refused, which defeats DNS rebinding.
    # TRAININGRUN_ALLOWED_HOSTS takes a comma-separated list (or a JSON list).
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Request bodies over this many bytes get 413 before they are read (REST and pages).
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)

    # The run
    preset: str = "h100"
    gpus: int = Field(default=32, ge=1, le=4096)
    servers: int = Field(default=4, ge=1, le=1024)
    leaves: int = Field(default=2, ge=1)
    spines: int = Field(default=2, ge=1)
    seed: int = Field(default=0, ge=0)
    batch_size: int | None = Field(default=None, ge=1)
    checkpoint_every: int = Field(default=50, ge=0)
    # The model and the parallel plan (app/engine/plan.py): bounded as a reset's are
    # (protocol.ResetControl); whether they fit together is the engine's to say.
    layers: int = Field(default=RunConfig.n_layer, ge=1, le=32)
    experts: int = Field(default=RunConfig.experts, ge=0, le=64)
    top_k: int = Field(default=RunConfig.top_k, ge=1, le=64)
    tp: int = Field(default=RunConfig.tp, ge=1, le=64)
    pp: int = Field(default=RunConfig.pp, ge=1, le=32)
    ep: int = Field(default=RunConfig.ep, ge=1, le=64)
    microbatches: int = Field(default=RunConfig.microbatches, ge=1, le=256)
    schedule: str = RunConfig.schedule
    # Which array library computes the model (app/engine/backend.py), and on what: the worker
    # process reads TRAININGRUN_BACKEND / TRAININGRUN_DEVICE, which serve sets from these.
    backend: Literal["numpy", "torch"] = "numpy"
    device: Literal["cpu", "cuda"] = "cpu"

    # Pacing and fan-out
    speed: str | float = "lesson"
    lesson_interval_s: float = Field(default=2.0, gt=0)
    max_fps: float = Field(default=20.0, gt=0, le=240)
    # Rest (stop stepping) after this long with no viewer; 0 never rests.
    rest_after_s: float = Field(default=10.0, ge=0)
    # Inbound message budget per client: a token bucket.
    control_rate: float = Field(default=10.0, gt=0)
    control_burst: int = Field(default=20, ge=1)
    max_message_bytes: int = 64 * 1024
    # Frames waiting for one viewer before it is judged too slow and disconnected.
    client_queue_limit: int = Field(default=512, ge=8)
    send_timeout_s: float = Field(default=30.0, gt=0)
    log_level: str = "info"

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _allowed_hosts(cls, v: Any) -> Any:
        if isinstance(v, str):
            text = v.strip()
            try:
                v = json.loads(text) if text.startswith("[") else None
            except ValueError:
                v = None  # "[::1]" is an address, not a JSON list
            if not isinstance(v, list):
                v = [part for part in text.replace(" ", ",").split(",") if part]
        if not isinstance(v, list | tuple):
            raise ValueError("must be a list of host names or addresses")
        return [host_entry(str(h)) for h in v]

    @field_validator("speed")
    @classmethod
    def _speed(cls, v: str | float) -> str | float:
        return parse_speed(v)

    @property
    def is_public(self) -> bool:
        return self.public if self.public is not None else not is_loopback(self.host)

    @property
    def effective_batch_size(self) -> int:
        return RunConfig.batch_for(self.gpus, self.batch_size)

    def run_config(self) -> RunConfig:
        return RunConfig(
            seed=self.seed,
            gpus=self.gpus,
            servers=self.servers,
            leaves=self.leaves,
            spines=self.spines,
            preset=self.preset,
            batch_size=self.effective_batch_size,
            checkpoint_every=self.checkpoint_every,
            n_layer=self.layers,
            experts=self.experts,
            top_k=self.top_k,
            tp=self.tp,
            pp=self.pp,
            ep=self.ep,
            microbatches=self.microbatches,
            schedule=self.schedule,
        )

    def runner_options(self) -> RunnerOptions:
        """What the runner needs, as plain values: it never sees these settings."""
        config_fields = {f.name for f in dataclasses.fields(RunConfig)}
        named = {"n_layer" if f == "layers" else f for f in self.model_fields_set}
        return RunnerOptions(
            run_dir=self.run_dir,
            config=self.run_config(),
            explicit=frozenset(named & config_fields),
            fresh=self.fresh,
            speed=self.speed,
            lesson_interval_s=self.lesson_interval_s,
            rest_after_s=self.rest_after_s,
        )

    @property
    def db_path(self) -> Path:
        return self.run_dir / "runs.sqlite"
