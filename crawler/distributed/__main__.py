"""`python -m crawler.distributed`: the queue's status and reset (crawler/distributed/cli.py)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
