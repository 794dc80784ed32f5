"""The command line: `main.py` picks the command, `parser.py` is the parser they share, and
each command (`serve`, `watch`, `train`, `memory`, `estimate`) is a module of its own."""
