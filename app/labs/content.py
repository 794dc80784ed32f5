"""Classroom material as data: discussion questions, swap-it cards and the cost discussion.

The words live in scenes/classroom.json so a teacher can edit them without touching code;
this module validates them with pydantic when they are loaded (and in the tests).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.engine.plan import SCHEDULES
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


class SwapPlan(_Strict):
    """The plan a card puts the live run on: every plan field, so that choosing the card
    gives the same run whatever plan the run had before (a reset on the current cluster)."""

    tp: int = Field(ge=1)
    pp: int = Field(ge=1)
    ep: int = Field(ge=1)
    microbatches: int = Field(ge=1)
    schedule: str
    experts: int = Field(ge=0)
    top_k: int = Field(ge=1)

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: str) -> str:
        if v not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}")
        return v


class SwapCard(_Strict):
    placement: Placement
    title: str
    summary: str
    memory: str
    communication: str
    speed: str
    tradeoff: str = Field(description="the trade-off in one line")
    # Choosing the card re-plans the live run onto `plan`; a card without one is shown in
    # the scene only, and `not_run` says why, honestly, on the card.
    plan: SwapPlan | None = None
    watch: str = Field(default="", description="what to look for once the run has the plan")
    not_run: str = Field(default="", description="why the card is shown, not run")

    @model_validator(mode="after")
    def _live_or_says_why(self) -> SwapCard:
        if self.plan is None and not self.not_run:
            raise ValueError(f"card {self.placement!r} has no plan: say why in not_run")
        return self


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


class LoopStep(_Strict):
    id: Literal["forward", "error", "backward", "update"]
    name: str
    # The teacher's copy shows it; the students' copy leaves a line to write it on.
    answer: str = Field(max_length=120)


class SheetText(_Strict):
    """The printed sheet's own parts: the seven parts drawn and the step's loop to fill in."""

    parts_title: str
    parts_note: str
    loop_title: str
    loop_prompt: str
    loop: list[LoopStep] = Field(min_length=4, max_length=4)

    @model_validator(mode="after")
    def _in_order(self) -> SheetText:
        order = [s.id for s in self.loop]
        if order != ["forward", "error", "backward", "update"]:
            raise ValueError(f"the loop goes forward, error, backward, update; got {order}")
        return self


class Classroom(_Strict):
    kind: Literal["classroom"]
    title: str
    ring: RingText
    memory: MemoryText
    swap_cards: list[SwapCard] = Field(min_length=4)
    cost: CostText
    sheet: SheetText
    questions: list[Question] = Field(min_length=2)
    grown_ups: str


def load_classroom(path: Path | None = None) -> Classroom:
    p = path or SCENES_DIR / CLASSROOM_FILE
    return Classroom.model_validate(json.loads(p.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def classroom() -> Classroom:
    """The bundled classroom material, loaded and validated once per process."""
    return load_classroom()
