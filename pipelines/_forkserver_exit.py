"""Imported only by the workers' forkserver, as its last preload: the forkserver ends with os._exit once its
crawler is gone, without tearing down the modules it preloaded (trafilatura, lxml, the extraction rules:
~0.1 s). Until it has exited, whoever reads the crawl's output (a pipe the crawler and its processes share:
a script, CI, `zhdedup demo`) waits for it. The workers it forks end with os._exit of their own
(multiprocessing.forkserver), so this exit handler runs in the forkserver only."""
import atexit
import os
import sys


def _exit_now() -> None:
    """Flush what the forkserver may have written, then leave without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


atexit.register(_exit_now)
