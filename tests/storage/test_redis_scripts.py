"""The Redis index's Lua scripts live in storage/redis_index/lua/*.lua: each is loaded by scripts.py, its
header comment stays out of what Redis receives, its includes are expanded, and the files ship as package data."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from storage.redis_index import scripts

ROOT = Path(__file__).resolve().parents[2]
LUA = ROOT / "storage" / "redis_index" / "lua"


def loaded() -> dict[str, str]:
    """{constant name: script} of every *_LUA constant in scripts.py."""
    return {name: value for name, value in vars(scripts).items() if name.endswith("_LUA")}


def test_every_lua_file_is_loaded_and_every_load_has_its_file():
    named = set(re.findall(r'load\("([a-z_]+\.lua)"\)', (ROOT / "storage/redis_index/scripts.py").read_text()))
    files = {p.name for p in LUA.glob("*.lua")}
    assert named == files


@pytest.mark.parametrize("name", sorted(loaded()))
def test_a_script_has_no_header_and_no_include_left(name):
    text = loaded()[name]
    assert text and not text.startswith("-- ")
    assert "--#include" not in text


def test_an_include_is_the_included_script_verbatim():
    assert scripts.POPCOUNT_LUA in scripts.CHECK_AND_INSERT_LUA
    assert scripts.BLOCK_CHECK_LUA.startswith(scripts.GUARD_LUA)
    assert scripts.SKETCH_BUCKET_LUA.startswith(scripts.GUARD_LUA + scripts.SKETCH_RECORDS_LUA)
    assert "local function pc(x)" not in (LUA / "check_and_insert.lua").read_text()   # written once, in popcount.lua


def test_the_lua_files_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "lua/*.lua" in data.get("storage.redis_index", [])
