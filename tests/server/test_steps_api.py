"""`GET /api/steps?from=&to=`: the recorded run in pages, each step with the probe as it stood
then; bad parameters get a clear error and leave the run going."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from wsclient import Client

from app.protocol import StepsPage
from app.run.history import History

ARGS = ("--gpus", "8", "--servers", "2", "--speed", "20", "--checkpoint-every", "10")


def steps_over_ws(url: str, n: int) -> list[dict]:
    async def go():
        c = await Client.connect(url)
        await c.until("snapshot")
        steps = [await c.until("step") for _ in range(n)]
        await c.close()
        return steps

    # In a thread of its own: a browser test's event loop may be running in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


@pytest.fixture(scope="module")
def served(live_server_module):
    srv = live_server_module(*ARGS)
    steps = steps_over_ws(srv.ws_url, 24)
    return srv, {s["step"]: s for s in steps}


def test_a_page_holds_each_step_as_it_was_shown(served) -> None:
    srv, seen = served
    r = httpx.get(f"{srv.url}/api/steps", params={"from": 1, "to": 20}, timeout=10)
    assert r.status_code == 200, r.text
    page = StepsPage.model_validate(r.json())
    assert [s.step for s in page.steps] == list(range(1, 21))
    assert page.first_step == 1 and page.last_step >= 20 and page.recorded >= 20
    assert page.next_after_seq is None
    assert 10 in page.checkpoints  # a checkpoint every 10 steps: full weights exist there
    for s in page.steps:
        if s.step in seen:
            live = seen[s.step]
            assert (s.loss, s.grad_norm, s.lr, s.tokens_total) == (
                live["loss"],
                live["grad_norm"],
                live["lr"],
                live["tokens_total"],
            )
            assert s.sim_step_s == pytest.approx(live["sim_step_s"], rel=1e-12)
            if live["probe"] is not None:  # a step that computed its probe keeps it
                assert s.probe_step == s.step
                assert s.probe.model_dump() == live["probe"]
    # Steps between probes show the latest one before them, and say which step that was.
    step12 = next(s for s in page.steps if s.step == 12)
    assert step12.probe_step == 10
    step10 = next(s for s in page.steps if s.step == 10)
    assert step12.probe == step10.probe
    assert page.steps[0].probe_step == 1  # the first step always has one


def test_pages_follow_on_without_gaps(served) -> None:
    srv, _ = served
    got, after = [], 0
    for _ in range(10):
        r = httpx.get(
            f"{srv.url}/api/steps",
            params={"from": 3, "to": 17, "limit": 4, "after_seq": after},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["steps"]) <= 4
        got += [s["step"] for s in body["steps"]]
        after = body["next_after_seq"]
        if after is None:
            break
    assert got == list(range(3, 18))


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({"from": 20, "to": 3}, 400, "from (20) must not be after to (3)"),
        ({"from": -1}, 422, "from"),
        ({"to": "ten"}, 422, "to"),
        ({"limit": 0}, 422, "limit"),
        ({"limit": 5000}, 422, "limit"),
        ({"run_id": "../etc"}, 422, "run_id"),
        ({"run_id": "no-such-run"}, 404, "no recorded run 'no-such-run'"),
    ],
)
def test_bad_parameters_are_refused_clearly(served, params, status, needle) -> None:
    srv, _ = served
    r = httpx.get(f"{srv.url}/api/steps", params=params, timeout=10)
    assert r.status_code == status, r.text
    assert needle in r.text
    assert httpx.get(f"{srv.url}/api/health", timeout=10).json()["ok"] is True


def test_history_pages_by_seq_through_a_rollback(tmp_path) -> None:
    """A rolled-back run trains steps 4-5 twice: both attempts are in the record, in the
    order they happened, each with the probe that stood at its time."""
    h = History(tmp_path / "runs.sqlite")
    h.start_run("r", {})
    figures = {
        "epoch": 0,
        "grad_norm": 1.0,
        "lr": 0.001,
        "tokens_total": 0,
        "sim_step_s": 0.1,
        "wall_step_s": 0.01,
    }
    order = [1, 2, 3, 4, 5, 4, 5, 6]
    for seq, step in enumerate(order, start=1):
        probe = f'{{"prompt": "p", "top": [], "weights": [{seq}], "weights_name": "w"}}'
        h.add_step(
            seq,
            "r",
            {**figures, "step": step, "loss": 5.0 - seq / 10},
            [],
            probe=probe if step in (1, 4) else None,
        )
    rows = h.steps_page("r", 4, 5)
    assert [(r["seq"], r["step"]) for r in rows] == [(4, 4), (5, 5), (6, 4), (7, 5)]
    assert [r["probe"]["weights"] for r in rows] == [[4], [4], [6], [6]]
    assert [r["probe_step"] for r in rows] == [4, 4, 4, 4]
    assert h.step_span("r") == (1, 6, 8)
    assert h.step_span("other") is None
    assert h.steps_page("r", 1, 2, after_seq=1) == h.steps_page("r", 2, 2)
    h.close()
