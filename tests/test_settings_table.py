"""The settings table (app/options.py) is the one place a setting is declared: a setting added
to it reaches every command line it is marked for, its environment variable and the reset
control with its bounds; and every option of serve, train and watch and every field of the
reset control comes from it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError

from app.cli import serve, train, watch
from app.cli.flags import add_settings
from app.options import (
    RUN_CONFIG_FIELDS,
    On,
    Options,
    bounds,
    config_name,
    default,
    env_name,
    option,
    problems,
    settings_of,
)
from app.protocol import PLAN_FIELDS, ResetBase, ResetControl, reset_control
from app.settings import Settings

BUILDERS = {"serve": serve.build_parser, "train": train.build_parser, "watch": watch.build_parser}
# Train's own options: what a headless run has and a server does not. None is a setting.
TRAIN_ONLY = {"steps", "fail_at", "fault", "data", "dtype", "json", "trace_out"}


class Wider(Settings):
    """The table with one more setting, added the way any setting is: one field."""

    widgets: Annotated[int, On("serve", "train", "watch", reset="run", config="n_widgets")] = Field(
        default=3, ge=1, le=9, description="widgets per GPU"
    )
    # On one command line only.
    knobs: Annotated[float, On("serve")] = Field(default=0.5, gt=0, description="knob turns")


@pytest.fixture(autouse=True)
def _no_settings_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TRAININGRUN_"):
            monkeypatch.delenv(key)


def actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}


def shape(a: argparse.Action) -> tuple[Any, ...]:
    """What an option is, as argparse holds it."""
    kind = type(a).__name__
    return (a.option_strings, kind, a.type, a.choices, a.default, a.help, a.metavar, a.nargs)


# --- a new setting, added in one place ------------------------------------------------------


@pytest.mark.parametrize("command", ["serve", "train", "watch"])
def test_a_new_setting_is_on_every_command_line_it_is_marked_for(command: str) -> None:
    opts = actions(BUILDERS[command](Wider))
    widgets = opts["widgets"]
    assert widgets.option_strings == ["--widgets"] and widgets.type is int
    assert widgets.help == "widgets per GPU (default 3)"
    assert ("knobs" in opts) == (command == "serve")
    assert "widgets" not in actions(BUILDERS[command]())  # the real table has no such thing
    parsed = BUILDERS[command](Wider).parse_args(["--widgets", "5"])
    assert parsed.widgets == 5


def test_a_new_setting_is_read_and_checked_from_each_command_line(tmp_path, capsys) -> None:
    run_dir = ["--run-dir", str(tmp_path / "run")]
    s = serve.settings_from_args(["--widgets", "5", "--knobs", "2.5", *run_dir], Wider)
    assert (s.widgets, s.knobs) == (5, 2.5)
    assert watch.settings_from_args(["--widgets", "7"], Wider).widgets == 7
    parser = train.build_parser(Wider)
    args = parser.parse_args(run_dir)
    assert args.widgets == 3  # train holds the default itself: it reads no environment
    with pytest.raises(SystemExit):
        serve.settings_from_args(["--widgets", "10", *run_dir], Wider)
    assert "trainingrun serve: --widgets: Input should be less than or equal to 9" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        train.config_from_args(parser.parse_args(["--widgets", "0", *run_dir]), parser, Wider)
    assert capsys.readouterr().err == "trainingrun train: --widgets must be at least 1, got 0\n"


def test_each_command_starts_its_run_from_the_tables_values(tmp_path) -> None:
    argv = ["--gpus", "8", "--servers", "2", "--layers", "4", "--pp", "2", "--seed", "7"]
    argv += ["--batch-size", "16", "--run-dir", str(tmp_path / "run")]
    parser = train.build_parser(Wider)
    trained = train.config_from_args(parser.parse_args([*argv, "--widgets", "2"]), parser, Wider)
    served = serve.settings_from_args(argv).run_config()
    for config in (trained, served):
        got = (config.gpus, config.servers, config.n_layer, config.pp, config.seed)
        assert got == (8, 2, 4, 2, 7) and config.batch_size == 16


def test_a_new_setting_is_read_from_its_environment_variable(monkeypatch, tmp_path, capsys):
    assert env_name(Wider, "widgets") == "TRAININGRUN_WIDGETS"
    monkeypatch.setenv("TRAININGRUN_WIDGETS", "8")
    assert Wider().widgets == 8
    assert serve.settings_from_args(["--run-dir", str(tmp_path / "r")], Wider).widgets == 8
    given = serve.settings_from_args(["--widgets", "2", "--run-dir", str(tmp_path / "r")], Wider)
    assert given.widgets == 2  # the command line beats the environment
    monkeypatch.setenv("TRAININGRUN_WIDGETS", "0")
    with pytest.raises(SystemExit):
        watch.settings_from_args([], Wider)
    err = capsys.readouterr().err
    assert err.startswith("trainingrun watch: TRAININGRUN_WIDGETS: ") and err.count("\n") == 1


def test_a_new_setting_is_in_the_reset_control_with_its_bounds() -> None:
    control = reset_control(Wider)
    assert "n_widgets" not in ResetControl.model_fields  # named as RunConfig would name it
    assert bounds(control.model_fields["n_widgets"]) == {"ge": 1, "le": 9}
    assert control.model_fields["n_widgets"].description == "widgets per GPU"
    assert "knobs" not in control.model_fields  # not marked for a reset
    ok = control.model_validate({"type": "control", "action": "reset", "n_widgets": 9})
    assert ok.n_widgets == 9 and ok.seed is None
    for bad in (0, 10, "5", 2.0, True):
        with pytest.raises(ValidationError):
            control.model_validate({"type": "control", "action": "reset", "n_widgets": bad})


# --- nothing declared anywhere else ---------------------------------------------------------


@pytest.mark.parametrize("command", ["serve", "train", "watch"])
def test_every_option_comes_from_the_table(command: str) -> None:
    opts = actions(BUILDERS[command]())
    made = argparse.ArgumentParser(add_help=False)
    add_settings(made, command, Settings, with_defaults=command == "train")
    from_table = actions(made)
    assert from_table, "the table marks no setting for this command"
    own = set(opts) - set(from_table)
    assert own <= (TRAIN_ONLY if command == "train" else set()), own
    assert not own & set(Settings.model_fields)  # a command's own option is no setting
    assert set(from_table) <= set(opts)
    for dest, made_action in from_table.items():
        assert shape(opts[dest]) == shape(made_action), dest
        assert made_action.help and made_action.help.strip(), dest


def test_the_commands_differ_only_where_the_table_says() -> None:
    assert default(Settings, "run_dir", "watch") == Path("runs/watch")
    assert default(Settings, "run_dir", "train") == Path("runs/train")
    assert default(Settings, "run_dir", "serve") == Path("runs/default")
    assert actions(train.build_parser())["run_dir"].default == Path("runs/train")
    assert watch.settings_from_args([]).run_dir == Path("runs/watch")


def test_the_environment_still_beats_a_commands_own_default(monkeypatch) -> None:
    monkeypatch.setenv("TRAININGRUN_RUN_DIR", "elsewhere")
    assert watch.settings_from_args([]).run_dir == Path("elsewhere")
    assert watch.settings_from_args(["--run-dir", "here"]).run_dir == Path("here")


def test_every_reset_field_comes_from_the_table_with_its_bounds() -> None:
    fields = set(ResetControl.model_fields) - set(ResetBase.model_fields)
    marked = {config_name(n, on): n for n, on in settings_of(Settings) if on.reset}
    assert fields == set(marked)
    assert {"seed", "gpus", "n_layer", "schedule"} <= fields
    for field, name in marked.items():
        info = Settings.model_fields[name]
        mine = ResetControl.model_fields[field]
        assert bounds(mine) == bounds(info) and bounds(info), field
        assert mine.description == info.description, field
        assert mine.default is None, field
        # A reset sets what RunConfig has: the runner hands it over by that name.
        assert field in RUN_CONFIG_FIELDS, field
    plan = [config_name(n, on) for n, on in settings_of(Settings) if on.reset == "plan"]
    assert list(PLAN_FIELDS) == plan and "n_layer" in plan and "gpus" not in plan


def test_a_storys_runs_take_the_tables_bounds() -> None:
    """A chapter's run (scenes/stories/*.json) is checked with the reset control's bounds,
    which are the table's: a story cannot ask for a run the server could not be reset to."""
    from app.engine.plan import SCHEDULES
    from app.routes.story import STORY_RUN_FIELDS, StoryRun

    marked = {config_name(n, on): n for n, on in settings_of(Settings) if on.reset == "plan"}
    marked |= {config_name(n, on): n for n, on in settings_of(Settings) if on.reset == "cluster"}
    assert set(STORY_RUN_FIELDS) | {"schedule"} == set(StoryRun.model_fields)
    for field in STORY_RUN_FIELDS:
        info = Settings.model_fields[marked[field]]
        assert bounds(StoryRun.model_fields[field]) == bounds(info) and bounds(info), field
    run = {f: 1 for f in STORY_RUN_FIELDS} | {"experts": 0, "schedule": SCHEDULES[0]}
    StoryRun.model_validate(run)
    too_many = bounds(Settings.model_fields["gpus"])["le"] + 1
    with pytest.raises(ValidationError, match="less than or equal to"):
        StoryRun.model_validate({**run, "gpus": too_many})
    with pytest.raises(ValidationError):
        StoryRun.model_validate({**run, "schedule": "zigzag"})


def test_every_setting_says_what_it_is_and_its_option_is_its_own() -> None:
    seen: dict[str, str] = {}
    for name, on in settings_of(Settings):
        assert Settings.model_fields[name].description, name
        if on.commands:
            assert option(name, on) not in seen, (name, seen.get(option(name, on)))
            seen[option(name, on)] = name
        if on.config:
            assert on.config in RUN_CONFIG_FIELDS, name
    assert seen["--layers"] == "layers" and seen["--open"] == "open_browser"


def test_the_tables_bounds_in_the_command_lines_words() -> None:
    names = {name: option(name, on) for name, on in settings_of(Options)}
    assert problems(Options, {"gpus": 0}, names) == ["--gpus must be at least 1, got 0"]
    assert problems(Options, {"gpus": 4096, "seed": -1}, names) == [
        "--seed must be 0 or more, got -1"
    ]
    assert problems(Options, {"max_fps": 241.0}, names) == [
        "--max-fps must be at most 240, got 241"
    ]
    assert problems(Options, {"preset": "tpu"}, names) == [
        "--preset must be one of a100, b200, h100, h800, got 'tpu'"
    ]
    assert problems(Options, {"token": "short"}, names) == [
        "--token must be at least 8 characters long, got 'short'"
    ]
    assert problems(Options, {"batch_size": None, "layers": 32}, names) == []
