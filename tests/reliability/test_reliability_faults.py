"""The fault-injection suite, short: each scenario once (one seed) over a site with exact, SimHash and
passage copies; real SIGKILLs of MongoDB, Redis (data kept or deleted), both, or the crawler with a server.
After the run and one re-run every story is stored once and every copy recorded, and the index matches
MongoDB. benchmarks/bench_faults.py runs the same scenarios with more seeds and prints the counts.
"""
from __future__ import annotations

import os

import pytest

from tests.reliability.reliability_helpers import (ALL_COPIES, SCENARIOS, NewsSites, embedded_var, fresh_db,
                                                   run_fault_scenario)

pytestmark = pytest.mark.timeout(300)
SEEDS = [int(s) for s in os.environ.get("ZHDEDUP_FAULT_SEEDS", "1").split(",")]


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    """A private var dir whose embedded servers these tests kill; stopped at the end."""
    yield from embedded_var(tmp_path_factory.mktemp("faultsuite"))


@pytest.fixture(scope="module")
def sites():
    """The A/B/C news sites with exact, SimHash and passage copies."""
    s = NewsSites(copies=ALL_COPIES)
    yield s
    s.stop()


@pytest.fixture
def db(var):
    """A fresh database name / key prefix on the private servers; dropped afterwards."""
    yield from fresh_db(var, "q")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fault_leaves_every_story_once(var, db, sites, tmp_path, scenario, seed):
    """A SIGKILL at a random moment, then one re-run: the store is exactly right."""
    counts = run_fault_scenario(var, db, sites, tmp_path, scenario, seed)
    assert counts["pages"] == len(sites.expected.groups)
    assert counts["duplicates"] == sites.expected.pages - len(sites.expected.groups)
