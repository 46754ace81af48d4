"""Site templates: lines repeated across a site's pages leave the text, story lines stay, pages never empty."""
from __future__ import annotations

import asyncio
import time

import pytest

from benchmarks.template_site import COPIED, N_LONG, N_STORIES, template_sites
from extract.template import HeldTemplates, PageLines, SiteTemplates, line_key
from pipelines.drops import SkippedItem
from pipelines.extract import ExtractPipeline

BLOCK = ["相关阅读：北京今日起实施新规，市民出行需注意这些变化。", "免责声明：本站转载文章仅为传递更多信息之目的。"]
STORIES = [
    ["中国女排今晚3比1战胜对手，提前一轮锁定小组第一，主教练赛后表示队员发挥稳定。"],
    ["国家统计局今天发布数据，10月份全国居民消费价格同比上涨2.1%，环比持平。"],
    ["今年第22号台风预计明天傍晚在海南登陆，气象部门已发布橙色预警，渔船全部回港。"],
    ["某市地铁三号线今天正式开通运营，全长二十五公里，共设车站十八座，日客流预计十万人次。"],
]


def test_block_shared_by_two_different_stories_is_removed_from_the_second():
    """Page 1 cannot know its block; page 2 (another title) loses it, and so does every later page."""
    model = SiteTemplates(min_keep=20)
    first = model.strip("a", "标题1", STORIES[0] + BLOCK)
    second = model.strip("a", "标题2", STORIES[1] + BLOCK)
    third = model.strip("a", "标题3", STORIES[2] + BLOCK)
    assert first.lines == STORIES[0] + BLOCK and first.removed == 0
    assert second.lines == STORIES[1] and second.removed == 2
    assert third.lines == STORIES[2] and third.removed_chars == sum(len(x) for x in BLOCK)


def test_same_title_pages_share_lines_without_making_a_template():
    """An updated story re-posted under its title is a copy, not a template: kept whole until a third page."""
    model = SiteTemplates(min_keep=20)
    model.strip("a", "同一标题", STORIES[0] + BLOCK)
    again = model.strip("a", "同一标题", STORIES[0] + ["更新：比赛录像今晚十点重播，敬请关注本台节目。"] + BLOCK)
    assert again.removed == 0


def test_sites_do_not_share_templates_and_identical_pages_count_once():
    """A block learned on site a means nothing on site b; re-fetching one page does not raise its counts."""
    model = SiteTemplates(min_keep=20)
    for _ in range(5):
        model.strip("a", "标题1", STORIES[0] + BLOCK)
    assert model.site("a").pages == 1
    assert model.strip("b", "标题2", STORIES[1] + BLOCK).removed == 0


def test_a_page_is_never_emptied_by_its_site_statistics():
    """When only template lines would be left out and too little remains, the page keeps its text."""
    model = SiteTemplates(min_keep=50)
    for i, story in enumerate(STORIES[:3]):
        model.strip("a", f"标题{i}", story + BLOCK)
    short = model.strip("a", "短讯", ["短讯一则。"] + BLOCK)
    assert short.removed == 0 and short.lines == ["短讯一则。"] + BLOCK


def test_short_lines_and_memory_bounds():
    """Lines under min_line never count; each site keeps at most max_lines lines, at most max_sites sites."""
    model = SiteTemplates(max_lines=8, max_sites=2)
    for i in range(20):
        model.strip("a", f"t{i}", [f"第{i}条不同的新闻正文内容在这里。" * 2, "好的。"])
    assert len(model.site("a").lines) <= 8
    assert line_key("好的。") not in model.site("a").lines
    for name in "bcd":
        model.site(name)
    assert len(model.sites) == 2 and "a" not in model.sites


def test_line_key_is_deterministic_ignores_spaces_and_keeps_digits():
    """Keys must not depend on Python's salted hash(); numbers are content (prices, counts, story numbers)."""
    assert line_key("责任编辑： 张三") == line_key("责任编辑：张三") == 0xF6D0EE8250D4F7DB  # blake2b-64
    assert line_key("10月CPI上涨2.1%") != line_key("11月CPI上涨1.8%")


def test_min_pages_below_two_is_refused():
    """One page alone can never tell a template."""
    with pytest.raises(ValueError, match="at least 2"):
        SiteTemplates(min_pages=1)


def test_pipeline_strips_the_generated_block_and_keeps_raw_text():
    """ExtractPipeline over the generated site, pages in flight together as in a crawl: the site's first
    pages wait for its template, so every story loses the 800-char block, the first ones included."""
    pipe = ExtractPipeline(templates=SiteTemplates(), warmup_seconds=30)
    pages = template_sites()["a"]
    paths = sorted(pages, key=lambda p: (len(p), p))

    async def crawl():
        return await asyncio.gather(*(pipe.process_item({"url": f"http://a.example{path}", "site": "a",
                                                         "body": pages[path].encode("utf-8")}) for path in paths),
                                    return_exceptions=True)

    results = asyncio.run(crawl())
    assert [p for p, r in zip(paths, results) if isinstance(r, SkippedItem)] == ["/"]
    items = [r for r in results if not isinstance(r, BaseException)]
    assert len(items) == N_STORIES + N_LONG
    for item in items:
        assert item["template_lines"] >= 8 and len(item["raw_text"]) - len(item["text"]) >= 750
        assert 80 <= len(item["text"]) <= 300 or "/l/" in item["url"]
    assert set(COPIED) <= set(range(N_STORIES))


def test_pipeline_without_templates_leaves_text_alone():
    """EXTRACT_TEMPLATES off: the text is what extract() returns."""
    pipe = ExtractPipeline(templates=None)
    pages = template_sites()["a"]
    for path in ("/s/0.html", "/s/1.html", "/s/2.html"):
        item = asyncio.run(pipe.process_item({"url": path, "site": "a", "body": pages[path].encode("utf-8")}))
        assert "raw_text" not in item and len(item["text"]) > 800


def _lone_page_wait(drained, warmup: float) -> float:
    """Seconds one page of a new site spends in HeldTemplates.strip."""
    held = HeldTemplates(SiteTemplates(), warmup_seconds=warmup, drained=drained)

    async def one():
        started = time.monotonic()
        await held.strip("lone", "标题", ["一个只有一页的网站上的一篇新闻正文。" * 3])
        return time.monotonic() - started

    return asyncio.run(one())


def test_a_lone_page_does_not_wait_out_the_warm_up_once_the_crawl_has_nothing_more():
    """A one-page site never gets a second page: once the crawl says nothing more is queued, the page goes
    on (one poll, ~0.1 s) instead of waiting the whole warm-up for a template that cannot form."""
    assert _lone_page_wait(lambda: True, warmup=30.0) < 10.0


def test_a_drained_crawl_is_asked_at_once_and_confirmed_shortly_after(monkeypatch):
    """The last page of a small site is the crawl's tail: the crawl is asked when the page arrives, not first
    after a poll (that cost every small crawl one more 0.1 s poll), and a second answer a confirming interval
    later, shorter than a poll, confirms it (two answers apart in time and in turns of the event loop, so a page
    whose links are still being scheduled is not taken for the end)."""
    steps: list[tuple[str, float]] = []   # the watcher's steps in order: the answers and its sleeps
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args, **kwargs):
        steps.append(("sleep", delay) if delay else ("turn", 0.0))
        return await real_sleep(delay, *args, **kwargs)

    def drained() -> bool:
        steps.append(("asked", time.monotonic()))
        return True

    monkeypatch.setattr(asyncio, "sleep", sleep)
    _lone_page_wait(drained, warmup=30.0)
    # asked before any check interval, then confirmed after CONFIRM_TURNS loop turns and one interval: an order
    # of steps, not wall-clock bounds, so a loaded machine cannot make it fail
    kinds = [kind for kind, _ in steps]
    assert kinds.count("asked") == 2
    second = kinds.index("asked", 1)
    assert kinds[:second + 1] == ["asked"] + ["turn"] * HeldTemplates.CONFIRM_TURNS + ["sleep", "asked"]
    assert steps[second - 1][1] == HeldTemplates.CHECK_SECONDS
    assert steps[second][1] - steps[0][1] >= HeldTemplates.CHECK_SECONDS - 0.005   # load only lengthens it


def test_one_watcher_asks_the_crawl_however_many_pages_wait():
    """A broad crawl has the first pages of hundreds of sites waiting at once: the crawl is asked by one
    watcher every CHECK_SECONDS, not by each page, and all of them go on once it is drained."""
    asked: list[float] = []
    state = {"drained": False}

    def drained() -> bool:
        asked.append(time.monotonic())
        return state["drained"]

    held = HeldTemplates(SiteTemplates(), warmup_seconds=30.0, drained=drained)

    async def crawl():
        pages = [asyncio.ensure_future(held.strip(f"site{n}", "标题", [f"第{n}个网站的唯一一篇新闻正文。" * 3]))
                 for n in range(300)]
        await asyncio.sleep(0.3)
        assert not any(page.done() for page in pages)
        state["drained"] = True
        started = time.monotonic()
        await asyncio.gather(*pages)
        return time.monotonic() - started

    released_after = asyncio.run(crawl())
    assert len(asked) < 0.6 / HeldTemplates.CHECK_SECONDS   # ~15 checks in 0.3 s, then two to confirm
    assert released_after < 5.0 and held.watcher.done()


def test_a_waiting_page_cancelled_with_its_crawl_leaves_nothing_pending():
    """A crawl stopped while pages wait cancels them: the watcher ends and no wait is left on the loop."""
    held = HeldTemplates(SiteTemplates(), warmup_seconds=30.0, drained=lambda: False)

    async def crawl():
        page = asyncio.ensure_future(held.strip("lone", "标题", ["一个只有一页的网站上的一篇新闻正文。" * 3]))
        await asyncio.sleep(0.05)
        page.cancel()
        with pytest.raises(asyncio.CancelledError):
            await page
        await asyncio.sleep(2 * HeldTemplates.CHECK_SECONDS)
        return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    assert asyncio.run(crawl()) == [] and held.waiting == 0 and held.watcher.done()


def test_a_crawl_that_cannot_say_whether_it_is_drained_is_taken_as_busy(caplog):
    """An error from the crawl's answer is logged; the page waits out its warm-up instead of failing."""
    def drained() -> bool:
        raise RuntimeError("engine gone")

    assert _lone_page_wait(drained, warmup=0.3) >= 0.3
    assert "cannot tell whether the crawl has more pages" in caplog.text


def test_a_page_waits_while_the_crawl_may_still_bring_pages_of_its_site():
    """While the crawl is busy (not drained) the first page waits for the warm-up, as before."""
    assert _lone_page_wait(lambda: False, warmup=0.6) >= 0.6


def test_page_lines_key_each_line_as_line_key_does_and_strip_the_same():
    """A page keyed once (PageLines) is counted and stripped exactly as its plain lines are."""
    page = STORIES[0] + [" 相关 阅读：\t更多新闻请点击这里", ""] + BLOCK
    keyed = PageLines.of(page)
    assert keyed.keys == [line_key(x) for x in page]
    assert keyed.page_key == line_key("\n".join(page))
    assert keyed.chars == [len("".join(x.split())) for x in page]
    plain, once = SiteTemplates(min_keep=20), SiteTemplates(min_keep=20)
    for i, story in enumerate(STORIES):
        lines = story + BLOCK
        assert plain.strip("a", f"标题{i}", lines) == once.strip("a", f"标题{i}", PageLines.of(lines))
    assert plain.sites["a"] == once.sites["a"]
