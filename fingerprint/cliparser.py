"""The argument parser every command line of the project uses: a usage mistake is one line and exit 2."""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse without the usage block on errors: `prog: error: what (see prog --help)`, exit 2."""

    def error(self, message: str) -> NoReturn:
        """Print one line naming the mistake and where help is, then exit 2."""
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(2)
