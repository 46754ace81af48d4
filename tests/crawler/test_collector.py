"""The crawl's garbage-collector tuning (crawler/collector.py): off when neither setting asks; when the spider
opens, the start is frozen once a process and the young threshold set; the crawl command sets the threshold
before the rest of its start. The real collector, restored after each test."""
from __future__ import annotations

import argparse
import gc

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawler import collector
from crawler import settings as project
from crawler.collector import CollectorTuning
from crawler.commands.crawl import Command


@pytest.fixture(autouse=True)
def restored_collector(monkeypatch):
    """Each test starts unfrozen with Python's thresholds, and leaves the worker's collector as it found it."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(collector, "_frozen", False)
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def opened(settings: dict) -> object:
    """A crawler with the extension built from settings, after its spider_opened signal."""
    crawler = get_crawler(Spider, settings_dict=settings)
    crawler.collector_tuning = CollectorTuning.from_crawler(crawler)   # held, as Scrapy holds its extensions
    crawler.signals.send_catch_log(signals.spider_opened, spider=Spider("gc"))
    return crawler


def test_the_project_turns_it_on_with_a_threshold():
    assert project.ZHDEDUP_GC_FREEZE is True and project.ZHDEDUP_GC_THRESHOLD > 700
    assert "crawler.collector.CollectorTuning" in project.EXTENSIONS


def test_off_when_neither_setting_asks():
    with pytest.raises(NotConfigured):
        CollectorTuning.from_crawler(get_crawler(Spider, settings_dict={"ZHDEDUP_GC_FREEZE": False,
                                                                        "ZHDEDUP_GC_THRESHOLD": 0}))


def test_the_opening_freezes_the_start_and_sets_the_threshold():
    crawler = opened({"ZHDEDUP_GC_FREEZE": True, "ZHDEDUP_GC_THRESHOLD": 12_345})
    frozen = gc.get_freeze_count()   # less, as frozen objects are freed by their reference counts
    assert crawler.stats.get_value("gc/frozen_objects") >= frozen > 10_000   # all alive at the opening
    assert gc.get_threshold() == (12_345, 10, 10)
    assert crawler.stats.get_value("gc/young_threshold") == 12_345


def test_the_start_is_frozen_once_a_process():
    first_crawler = opened({"ZHDEDUP_GC_FREEZE": True, "ZHDEDUP_GC_THRESHOLD": 0})
    first = gc.get_freeze_count()
    later = [[i] for i in range(20_000)]   # a second crawl's objects, made after the first opening
    second_crawler = opened({"ZHDEDUP_GC_FREEZE": True, "ZHDEDUP_GC_THRESHOLD": 0})
    assert gc.get_freeze_count() < first + len(later)
    assert second_crawler.stats.get_value("gc/frozen_objects") < first + len(later) and first_crawler
    assert gc.get_threshold() == (700, 10, 10)   # 0 leaves Python's threshold


def test_a_threshold_alone_freezes_nothing():
    crawler = opened({"ZHDEDUP_GC_FREEZE": False, "ZHDEDUP_GC_THRESHOLD": 5_000})
    assert gc.get_freeze_count() == 0 and gc.get_threshold()[0] == 5_000
    assert crawler.stats.get_value("gc/frozen_objects") is None


@pytest.mark.parametrize("threshold, expected", [(20_000, 20_000), (0, 700)])
def test_the_crawl_command_sets_the_threshold_for_the_rest_of_its_start(threshold, expected):
    command = Command()
    command.settings = Settings()
    command.settings.setmodule(project, priority="project")
    command.settings.set("ZHDEDUP_GC_THRESHOLD", threshold, priority="cmdline")
    parser = argparse.ArgumentParser()
    command.add_options(parser)
    command.process_options([], parser.parse_args([]))   # no spider named: no argument check, no early start
    assert gc.get_threshold()[0] == expected
