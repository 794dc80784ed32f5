"""The argument parser every command uses: errors in one line, `trainingrun CMD: message`."""

from __future__ import annotations

import argparse
from typing import NoReturn

PROG = "trainingrun"


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, `trainingrun CMD: message`, exit status 2:
    the usage block argparse prints first would bury the one thing that went wrong."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n")
