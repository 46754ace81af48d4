"""zhdedup: crawl Chinese news and fiction sites, keep one copy of every story, find who copied what.

`zhdedup COMMAND ...` runs what `python -m crawler|storage|admin|extract|fingerprint` do. Each subcommand hands its arguments to the module that owns it (imported only then, so `zhdedup simhash`
starts as fast as `python -m fingerprint simhash`); usage mistakes are one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, NamedTuple, Sequence

from fingerprint.cliparser import OneLineParser

PROG = "zhdedup"


class Command(NamedTuple):
    """Where a subcommand lives: the module whose main(argv, prog) runs it."""

    module: str
    help: str
    nested: bool = True   # the module's parser has this name as its own subcommand (else it is the whole parser)


COMMANDS: dict[str, Command] = {
    # crawling
    "demo": Command("crawler.__main__", "serve the demo sites, crawl them with both spiders, print the result"),
    "serve-demo": Command("crawler.__main__", "serve the demo sites on 127.0.0.1 until Ctrl-C"),
    "watch": Command("crawler.__main__", "re-visit watched sites on a schedule, catch new chapters, follow takedowns"),
    "distributed": Command("crawler.distributed.cli", "status or reset of a distributed crawl's Redis queue",
                           nested=False),
    # the store
    "status": Command("storage.__main__", "servers in use, whether they answer, counts"),
    "start": Command("storage.__main__", "start (or find) the embedded servers"),
    "stop": Command("storage.__main__", "stop the embedded servers cleanly"),
    "outcomes": Command("storage.__main__", "what became of every URL of a crawl run"),
    "pages": Command("storage.__main__", "stored pages, oldest first"),
    "duplicates": Command("storage.__main__", "recorded copies, or one original and its copies"),
    "rebuild-index": Command("storage.__main__", "rebuild the Redis index from MongoDB"),
    "replay-spool": Command("storage.__main__", "replay writes spooled while a server was down"),
    "purge": Command("storage.__main__", "remove pages from both stores"),
    # review and the source library
    "serve": Command("admin.cli", "run the admin web server"),
    "users": Command("admin.cli", "manage reviewer accounts"),
    "sources": Command("admin.cli", "the source library: add, list, remove registered works"),
    "matches": Command("admin.cli", "list stored matches, newest first"),
    "evidence": Command("admin.cli", "check the evidence log; export a match's evidence pack"),
    "notices": Command("admin.cli", "takedown notice for the confirmed matches of an infringing site"),
    # files on disk, no servers
    "extract": Command("extract.__main__", "print the article body of a saved HTML page", nested=False),
    "simhash": Command("fingerprint.cli", "print the 64-bit SimHash of each file"),
    "dna": Command("fingerprint.cli", "print the pinyin-initial DNA windows of each file"),
    "dedup": Command("fingerprint.cli", "cluster a JSONL corpus of {id, text}, no servers"),
    "compare": Command("fingerprint.cli", "every method's similarity for two texts"),
    "match": Command("fingerprint.cli", "find which registered works each suspect copies, no servers"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: lists the subcommands; their own arguments are parsed by their modules."""
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n")[0].split(": ", 1)[1],
                           epilog=f"`{PROG} COMMAND --help` shows a command's arguments.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, title="commands")
    for name, cmd in COMMANDS.items():
        sub.add_parser(name, help=cmd.help, add_help=False)
    return parser


def _version() -> str:
    """The package's version, the fingerprint and extraction versions (stored pages depend on the latter two)."""
    from importlib.metadata import PackageNotFoundError, version

    from extract.version import EXTRACT_VERSION
    from fingerprint.synonyms import enabled
    from fingerprint.version import fingerprint_version

    try:
        package = version("zhdedup")
    except PackageNotFoundError:
        package = "unknown"
    return f"{PROG} {package}, fingerprint {fingerprint_version(enabled())}, extraction {EXTRACT_VERSION}"


def run(name: str, args: Sequence[str]) -> int:
    """Run subcommand `name` with its arguments through the main of the module that owns it."""
    cmd = COMMANDS[name]
    entry: Callable[..., int] = importlib.import_module(cmd.module).main
    if cmd.nested:
        return entry([name, *args], prog=PROG)
    return entry(list(args), prog=f"{PROG} {name}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `zhdedup` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return run(argv[0], argv[1:])
    build_parser().parse_args(argv)  # --help, --version, or a mistake: one line and exit 2
    return 2
