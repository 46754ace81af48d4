"""The index's Lua scripts, read from the ``lua/`` files beside this module (package data, importlib.resources).

A file starts with a header of ``-- `` comment lines (KEYS, ARGV, what it returns), which is not sent to
Redis; a line ``--#include name.lua`` is replaced by that file's script. The text sent is the same, byte for
byte, as when the scripts were Python strings, so their SHA1 (EVALSHA) is unchanged.
"""
from __future__ import annotations

from importlib.resources import files

_INCLUDE = "--#include "


def load(name: str) -> str:
    """The script in ``lua/<name>``: its header comment left out, its includes expanded."""
    lines = files(__package__).joinpath("lua", name).read_text(encoding="utf-8").splitlines(keepends=True)
    start = 0
    while start < len(lines) and lines[start].startswith("-- "):
        start += 1
    return "".join(load(line[len(_INCLUDE):].strip()) if line.startswith(_INCLUDE) else line
                   for line in lines[start:])


# Shared pieces (included by the scripts below): a 32-bit popcount, a cluster slot's marker guard, sketch records.
POPCOUNT_LUA = load("popcount.lua")
GUARD_LUA = load("guard.lua")
SKETCH_RECORDS_LUA = load("sketch_records.lua")
# SimHash tables, one server (simhash.py).
CHECK_AND_INSERT_LUA = load("check_and_insert.lua")
REMOVE_LUA = load("remove.lua")
TRANSFER_LUA = load("transfer.lua")
# SimHash tables, a cluster: one block table (one slot) per script.
BLOCK_CHECK_LUA = load("block_check.lua")
BLOCK_REPOINT_LUA = load("block_repoint.lua")
BLOCK_REMOVE_LUA = load("block_remove.lua")
# Compare-and-set / compare-and-delete of a hash field.
HSET_IF_LUA = load("hset_if.lua")
HDEL_IF_LUA = load("hdel_if.lua")
# Passage sketches (sketches.py).
SKETCH_CLAIM_LUA = load("sketch_claim.lua")
SKETCH_BUCKET_LUA = load("sketch_bucket.lua")
SKETCH_UNCLAIM_BUCKET_LUA = load("sketch_unclaim_bucket.lua")
SKETCH_LOAD_LUA = load("sketch_load.lua")
