"""'What it really looks like': each numbered part of the scene next to the real thing it
stands for in a data hall, with a figure and where the figure comes from.

The words live in scenes/reallook.json; this module validates them when they are loaded."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.paths import SCENES_DIR

REALLOOK_FILE = "reallook.json"

# Points in the hall drawing a callout can point at (static/js/labs/hall.js places them).
Anchor = Literal["storage_top", "storage_low", "cpus", "gpu_rack", "network_rack", "tray", "hbm"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RealPart(_Strict):
    n: int = Field(ge=1, le=7)
    part: str
    name: str
    real: str = Field(min_length=20)
    figure: str
    anchor: Anchor
    source: str = Field(min_length=5)


class RealLook(_Strict):
    kind: Literal["reallook"]
    title: str
    lede: str
    scale_note: str
    parts: list[RealPart]
    scale: list[str]
    scale_source: str

    @model_validator(mode="after")
    def _every_part_once_in_order(self) -> RealLook:
        numbers = [p.n for p in self.parts]
        if numbers != list(range(1, len(self.parts) + 1)):
            raise ValueError(f"parts must be numbered 1..{len(self.parts)} in order, got {numbers}")
        return self


@lru_cache(maxsize=1)
def reallook() -> RealLook:
    """The bundled text, loaded and validated once per process."""
    raw = json.loads((SCENES_DIR / REALLOOK_FILE).read_text(encoding="utf-8"))
    return RealLook.model_validate(raw)
