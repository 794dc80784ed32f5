"""Classroom material as data: discussion questions, swap-it cards and the cost discussion.

The words live in scenes/classroom.json so a teacher can edit them without touching code;
this module validates them with pydantic when they are loaded (and in the tests).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.paths import SCENES_DIR

CLASSROOM_FILE = "classroom.json"

Placement = Literal["data", "tensor_pipeline", "expert", "finetune"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RingText(_Strict):
    title: str
    lede: str
    reduce_scatter: str
    all_gather: str
    why: str
    note: str
    big_idea: str


class MemoryText(_Strict):
    title: str
    lede: str
    big_idea: str


class SwapCard(_Strict):
    placement: Placement
    title: str
    summary: str
    memory: str
    communication: str
    speed: str
    tradeoff: str = Field(description="the trade-off in one line")


class CostText(_Strict):
    title: str
    paragraphs: list[str] = Field(min_length=2)
    note: str


class Question(_Strict):
    id: str
    theme: str
    text: str
    follow_up: str
    # For the teacher's copy of the printed sheet only (/sheet/teacher): what to listen for,
    # and what on the screen to point at. The students' copy (/sheet) never shows it.
    teacher_note: str = Field(default="", max_length=300)


class Classroom(_Strict):
    kind: Literal["classroom"]
    title: str
    ring: RingText
    memory: MemoryText
    swap_cards: list[SwapCard] = Field(min_length=4)
    cost: CostText
    questions: list[Question] = Field(min_length=2)
    grown_ups: str


def load_classroom(path: Path | None = None) -> Classroom:
    p = path or SCENES_DIR / CLASSROOM_FILE
    return Classroom.model_validate(json.loads(p.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def classroom() -> Classroom:
    """The bundled classroom material, loaded and validated once per process."""
    return load_classroom()
