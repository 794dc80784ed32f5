"""The web edge: the app factory (`app.py`), who may reach and control it (`guard.py`), what
a request may carry (`limits.py`), errors without echo (`errors.py`), tokens kept out of the
log (`redact.py`), the fan-out to every viewer (`hub.py`) and the presenter relay
(`presenter.py`)."""
