"""Scrapy's check of a callback's source is off (WARN_ON_GENERATOR_RETURN_VALUE: it runs ast in the reactor
thread while the store threads may be running it too, which CPython 3.11 cannot do safely); what it looked for
is checked here, once, for every generator method of our spiders."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import scrapy
from scrapy.utils.misc import is_generator_with_return_value
from scrapy.settings import Settings

import crawler.spiders


def _spider_generators() -> list[tuple[str, object]]:
    """(Class.method, function) for every generator function defined on a spider class of crawler.spiders."""
    found = []
    for info in pkgutil.iter_modules(crawler.spiders.__path__):
        module = importlib.import_module(f"crawler.spiders.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, scrapy.Spider) and cls.__module__ == module.__name__:
                found += [(f"{cls.__name__}.{name}", fn) for name, fn in vars(cls).items()
                          if inspect.isgeneratorfunction(fn)]
    return found


def test_the_projects_crawls_skip_scrapys_source_check():
    # not get_project_settings(): it sets SCRAPY_SETTINGS_MODULE in this process's environment, and a later
    # test's `scrapy runspider` outside the project then ran with our settings (and left embedded servers)
    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    assert settings.getbool("WARN_ON_GENERATOR_RETURN_VALUE") is False


def test_no_spider_callback_is_a_generator_returning_a_value():
    generators = _spider_generators()
    assert {"NewsSpider.parse_feed", "FictionSpider.parse_chapter"} <= {name for name, _ in generators}
    assert [name for name, fn in generators if is_generator_with_return_value(fn)] == []


def test_the_check_finds_a_generator_that_returns_a_value():
    class Bad(scrapy.Spider):
        name = "bad"

        def parse(self, response):
            yield {"url": response.url}
            return "lost"

    assert is_generator_with_return_value(Bad.parse)


def test_the_news_spiders_page_callback_is_an_async_generator():
    # it awaits the page's facts from a worker process; an async generator cannot return a value at all
    from crawler.spiders.news import NewsSpider
    assert inspect.isasyncgenfunction(NewsSpider.parse_page)
