"""`trainingrun memory` prints the same numbers as the API, as a table or JSON."""

from __future__ import annotations

import json

import pytest

from app.cli.main import main
from app.cli.memory import _parser


def test_table(capsys) -> None:
    assert main(["memory", "--params", "70B", "--precision", "bf16", "--gpu", "h100-80gb"]) == 0
    out = capsys.readouterr().out
    assert "140 GB" in out and "1.12 TB" in out
    assert "GPUs just to fit training" in out and "16" in out
    # Llama 3 70B's shape: one 8,192-token sequence's activations, by what is recomputed.
    acts = out[out.index("Activations") :]
    assert "8,192-token sequence through 80 layers" in acts
    assert "nothing recomputed" in acts and "1.9 TB" in acts and "10.7 GB" in acts


def test_json(capsys) -> None:
    assert main(["memory", "--params", "7B", "--precision", "int4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weights_bytes"] == 3.5e9
    assert data["gpus_to_serve"] == 1


def test_bad_size_is_an_error(capsys) -> None:
    assert main(["memory", "--params", "0"]) == 2
    assert "--params" in capsys.readouterr().err


def test_help_lists_every_option_with_its_help(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for action in _parser()._actions:
        assert action.help, f"{action.option_strings} has no help text"
        assert action.option_strings[-1] in out


def test_bad_choice_is_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "--gpu", "h100-8gb"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainingrun memory: ") and "--gpu" in err


def test_serving_traffic_on_the_command_line_and_the_api(capsys) -> None:
    argv = ["memory", "--params", "70B", "--shape", "llama3-70b", "--context", "8192"]
    assert main([*argv, "--batch", "32"]) == 0
    out = capsys.readouterr().out
    assert "Serving (weights + KV cache)" in out and "85.9 GB of keys and values" in out
    assert main(argv) == 2  # no batch: said, naming its option
    assert "--batch: is needed" in capsys.readouterr().err
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from app.routes import labs

    app = FastAPI()
    app.include_router(labs.router)
    got = TestClient(app).get(
        "/api/labs/memory",
        params={"params": "70B", "shape": "llama3-70b", "context": 8192, "batch": 32},
    )
    assert (
        got.status_code == 200 and got.json()["kv_cache_bytes"] == 2 * 80 * 8 * 128 * 8192 * 32 * 2
    )
    bad = TestClient(app).get(
        "/api/labs/memory", params={"params": "70B", "shape": "llama3-70b", "context": 8192}
    )
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "batch"]
