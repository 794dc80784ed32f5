"""The fan-out hub on its own: coalescing, events kept, bounded queues, the shared budget."""

from __future__ import annotations

import asyncio

from app.web.hub import Frame, Hub


def test_a_stalled_viewer_keeps_only_the_latest_step_and_every_event() -> None:
    async def go():
        hub = Hub(max_fps=1000, queue_limit=50, send_timeout_s=5)
        gate = asyncio.Event()
        got: list[str] = []

        async def slow_send(text: str) -> None:
            await gate.wait()  # the viewer stops reading until the gate opens
            got.append(text)

        fast: list[str] = []

        async def fast_send(text: str) -> None:
            fast.append(text)

        slow = hub.add(slow_send, can_control=False, first=lambda: ["hello"])
        hub.add(fast_send, can_control=False, first=lambda: ["hello"])
        await asyncio.sleep(0.01)
        for i in range(1, 31):
            events = [Frame(f"event-{i}")] if i % 10 == 0 else []
            hub.publish(Frame(f"step-{i}", is_step=True, events=events))
            await asyncio.sleep(0.002)
        await asyncio.sleep(0.05)
        assert fast[-1] == "step-30"  # the stalled viewer held nobody up
        gate.set()
        await asyncio.sleep(0.05)
        assert got[0] == "hello" and got[-1] == "step-30"
        # Events of dropped steps go out on their own; step 30 was delivered and carries its own.
        assert [t for t in got if t.startswith("event")] == ["event-10", "event-20"]
        assert len([t for t in got if t.startswith("step")]) <= 3  # coalesced, no backlog
        assert slow.steps_dropped >= 25
        await hub.close_all()

    asyncio.run(go())


def test_a_viewer_that_never_reads_is_dropped_not_buffered() -> None:
    async def go():
        hub = Hub(max_fps=1000, queue_limit=5, send_timeout_s=60)

        async def never(text: str) -> None:
            await asyncio.sleep(3600)

        v = hub.add(never, can_control=False, first=lambda: ["hello"])
        for i in range(20):
            hub.publish(Frame(f"event-{i}"))  # events are never coalesced away
        assert v.closed.is_set() and "too slow" in v.close_reason
        await hub.close_all()
        assert hub.count == 0

    asyncio.run(go())


def test_step_frames_share_a_budget_across_viewers() -> None:
    hub = Hub(max_fps=20, queue_limit=10, send_timeout_s=1, budget_fps=3000)
    assert hub.step_gap() == 1 / 20
    hub._viewers = set(range(500))  # the gap depends only on how many are watching
    assert abs(hub.step_gap() - 500 / 3000) < 1e-12
