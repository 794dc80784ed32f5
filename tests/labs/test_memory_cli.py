"""`trainingrun memory` prints the same numbers as the API, as a table or JSON."""

from __future__ import annotations

import json

from app.cli import main


def test_table(capsys) -> None:
    assert main(["memory", "--params", "70B", "--precision", "bf16", "--gpu", "h100-80gb"]) == 0
    out = capsys.readouterr().out
    assert "140 GB" in out and "1.12 TB" in out
    assert "GPUs just to fit training" in out and "16" in out


def test_json(capsys) -> None:
    assert main(["memory", "--params", "7B", "--precision", "int4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weights_bytes"] == 3.5e9
    assert data["gpus_to_serve"] == 1


def test_bad_size_is_an_error(capsys) -> None:
    assert main(["memory", "--params", "0"]) == 2
    assert "--params" in capsys.readouterr().err
