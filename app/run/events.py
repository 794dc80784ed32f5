"""Events the server raises itself, outside any training step, as protocol `EventMsg`s.

Run control (paused, resumed, speed_changed, run_reset), what went wrong around the run
(diverged, worker_failed, record_failed, record_set_aside), all listed in
`protocol.CONTROL_EVENT_KINDS`, and the `restored` event for a run that resumes after an
unclean stop. The engine raises all other events; their wording lives there.
"""

from __future__ import annotations

from app.engine.report import restored_event
from app.protocol import EventMsg


def paused(step: int) -> EventMsg:
    return EventMsg(kind="paused", step=step, message=f"Paused at step {step}")


def resumed(step: int) -> EventMsg:
    return EventMsg(kind="resumed", step=step, message=f"Resumed at step {step}")


def speed_changed(step: int, speed: str | float) -> EventMsg:
    label = speed if isinstance(speed, str) else f"{speed:g} steps/s"
    return EventMsg(
        kind="speed_changed",
        step=step,
        message=f"Speed set to {label}",
        detail={"speed": speed},
    )


def run_reset(step: int, *, run_id: str, previous_run_id: str, seed: int, preset: str) -> EventMsg:
    return EventMsg(
        kind="run_reset",
        step=step,
        message=f"Started a fresh run (seed {seed}, {preset})",
        detail={
            "run_id": run_id,
            "previous_run_id": previous_run_id,
            "seed": seed,
            "preset": preset,
        },
    )


def restored_after_unclean_stop(
    restored_step: int, failed_step: int, *, from_checkpoint: bool
) -> EventMsg:
    """The run resumed at `restored_step` after the process died at `failed_step`.

    `from_checkpoint`: whether a checkpoint was loaded (otherwise the run starts over from
    step 0). Built by the engine's one `restored` builder, so every kind reads alike.
    """
    lost = failed_step - restored_step
    message = None
    if not from_checkpoint:
        message = f"Restarted from step {restored_step} after an unclean stop: {lost} steps to redo"
    elif lost == 0:
        message = (
            f"Resumed from the checkpoint at step {restored_step} after an unclean stop: "
            "nothing to redo"
        )
    event = restored_event(
        restored_step, failed_step=failed_step, steps_lost=lost, reason="crash", message=message
    )
    return EventMsg.model_validate(event)


def diverged(engine_event: EventMsg) -> EventMsg:
    """The engine's `diverged` event (its numbers JSON-safe, its wording), with what the
    server does about it: the run pauses at its last good step until a viewer acts."""
    message = engine_event.message.rstrip(".")
    if engine_event.detail.get("exhausted"):
        # Every checkpoint left diverged on its first step: trying again cannot help.
        return engine_event.model_copy(update={"message": f"{message}. Paused"})
    return engine_event.model_copy(
        update={"message": f"{message}. Paused: reset, or resume to try the step again"}
    )


def worker_failed(step: int, *, reason: str, attempt: int, retry_in_s: float) -> EventMsg:
    """The training worker stopped (or could not start); another try follows."""
    return EventMsg(
        kind="worker_failed",
        step=step,
        message=f"The training worker stopped: {reason}. Restart {attempt} in {retry_in_s:g} s",
        detail={"reason": reason, "attempt": attempt, "retry_in_s": retry_in_s},
    )


def record_failed(step: int, *, seq: int, reason: str) -> EventMsg:
    """Writing steps to the history failed; the run goes on, unrecorded until it works again."""
    return EventMsg(
        kind="record_failed",
        step=step,
        message=f"Steps are not being recorded from step {step}: {reason}. The run goes on",
        detail={"seq": seq, "reason": reason},
    )


# What a record set aside was, in the page's words (its locales know these three).
SET_ASIDE_WHY = {
    "not-a-database": "not a database",
    "malformed": "damaged",
    "cannot-open": "cannot be opened",
}


def record_set_aside(step: int, *, moved_to: str, reason: str, why: str) -> EventMsg:
    """The run record could not be opened at start: it was renamed, not deleted, and the
    server went on with a fresh one (app/run/history.py). `why`: SQLite's own words."""
    said = SET_ASIDE_WHY.get(reason, "cannot be opened")
    return EventMsg(
        kind="record_set_aside",
        step=step,
        message=f"Earlier history was set aside: the run record could not be used ({said}). "
        f"It is kept as {moved_to}, and a fresh record was started",
        detail={"moved_to": moved_to, "reason": reason, "why": why},
    )


# What each fault kind's link-cut path is called on screen (timing.REROUTE's kinds).
_VIA = {"leaf": "out through the network and back via the leaf switch", "spine": "up via a spine"}


def _n(gpu: object) -> object:
    """A GPU id as the page numbers it (from 1); anything else as it is."""
    return gpu + 1 if isinstance(gpu, int) else gpu


def fault_injected(
    step: int,
    *,
    kind: str,
    target: int,
    start: int,
    steps: int,
    factor: float = 1.0,
    link: dict[str, object] | None = None,
) -> EventMsg:
    """A fault at scale is set for steps [start, start + steps) (Trainer.inject). `link`: for
    a cut link, the hop it cuts ({src, dst, link, via}: its link kind, and the kind of path
    it takes instead). The message counts GPUs from 1, as the page does; `detail` keeps ids."""
    last = start + steps - 1
    when = f"step {start}" if steps == 1 else f"steps {start}-{last}"
    detail: dict[str, object] = {"kind": kind, "target": target, "start": start, "steps": steps}
    if kind == "dead":
        message = (
            f"GPU {target + 1} will fail in step {start}: the run rolls back to its checkpoint"
        )
        detail["gpu"] = target
    elif kind == "straggler":
        message = (
            f"GPU {target + 1} runs {factor:g}x slower in {when}: "
            "the others wait for it at the all-reduce"
        )
        detail |= {"gpu": target, "factor": factor}
    elif kind == "data_stall":
        message = f"The data loaders stall {target} ms in {when}: every GPU waits for its batch"
        detail["ms"] = target
    else:
        link = link or {}
        src, dst, was, via = link.get("src"), link.get("dst"), link.get("link"), link.get("via")
        if via == was:
            around = "its traffic moves to the other spines (no slower in this model)"
        else:
            around = f"the ring's hop goes {_VIA.get(str(via), f'via {via}')}"
        message = f"Link GPU {_n(src)} → GPU {_n(dst)} ({was}) cut in {when}: {around}"
        detail |= {"gpu": target, **link}
    return EventMsg(kind="fault_injected", step=step, message=message, detail=detail)
