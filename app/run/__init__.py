"""The built-in run's supervision: the runner paces the run and applies controls
(`runner.py`, `controls.py`), the trainer lives in a worker process (`worker.py`, reached
through `worker_link.py` and the messages of `pipe.py`), every step is recorded (`history.py`)
and told to viewers (`view.py`, `events.py`); `choice.py` and `rundir.py` decide which run a
starting server takes up and where."""
