"""Credit lines that carry data (原标题, 来源, 责任编辑) leave the body and land in item fields (issue 29)."""
from __future__ import annotations

import asyncio

from extract.article import extract
from extract.boilerplate import credit_fields
from pipelines.extract import ExtractPipeline

P1 = ("2019年，龙湖集团即将迎来赴港上市10周年。十年前带领龙湖集团成功赴港上市并跻身内地女首富的吴亚军，"
      "在前不久召开的中期业绩会上表示，“对一家上市公司来说，没有故事就是好故事，龙湖没有故事”。")
P2 = ("近日，龙湖集团公布了2019年中期业绩报告。上半年，龙湖实现合约销售金额1056.2亿元，同比增长8.8%；"
      "营业额385.7亿元，同比增长42.2%；归属于股东的净利润为63.1亿元，核心溢利为47.0亿元，同比增长26%。")
P3 = "对以租金为主要盈利来源的共享充电宝行业，上调价格无疑是一针强心剂。刘颖介绍说，目前共享充电宝市场日均订单量保持在3000万左右。"
PAGE = ("<html><head><title>龙湖集团“暗伤”曝露_网易新闻</title></head><body>"
        "<div><a href='/'>首页</a> <a href='/n'>新闻</a></div><div class='post_text'><h1>龙湖集团“暗伤”曝露</h1>"
        "<p>来源：每日经济新闻</p>" + "".join(f"<p>{p}</p>" for p in (P1, P2, P3)) +
        "<p>（原标题：多地项目连环爆雷 狂奔的龙湖集团“暗伤”曝露？）</p><p>责任编辑：王鹏_NF5619</p></div>"
        "<div class='footer'>网易公司版权所有 &copy;1997-2019</div></body></html>")


def test_credit_lines_become_fields_and_leave_the_text() -> None:
    result = extract(PAGE.encode("utf-8"))
    assert result.text.split("\n") == [P1, P2, P3]
    assert result.original_title == "多地项目连环爆雷 狂奔的龙湖集团“暗伤”曝露？"
    assert result.source == "每日经济新闻"
    assert result.editor == "王鹏"


def test_no_credit_lines_no_fields_and_body_sentences_are_not_credits() -> None:
    assert credit_fields([P1, P2, "编辑部的同事们说，来源可靠的消息才值得报道。"]) == {}
    result = extract(PAGE.replace("来源：每日经济新闻", "").encode("utf-8"))
    assert result.source is None and result.editor == "王鹏"


def test_pipeline_puts_the_credit_fields_on_the_item() -> None:
    from scrapy.utils.test import get_crawler

    pipe = ExtractPipeline.from_crawler(get_crawler(settings_dict={"ZHDEDUP_EXTRACT_WORKERS": 0}))
    out = asyncio.run(pipe.process_item({"url": "https://news.163.com/19/0907/a.html", "body": PAGE.encode("utf-8")}))
    assert (out["source"], out["editor"]) == ("每日经济新闻", "王鹏")
    assert out["original_title"].startswith("多地项目连环爆雷")


def test_the_item_carries_the_extraction_version_and_the_command_names_it() -> None:
    """A re-crawled page whose text changed because the rules changed is told apart by this stored version."""
    import subprocess
    import sys

    from scrapy.utils.test import get_crawler

    from extract.version import EXTRACT_VERSION

    pipe = ExtractPipeline.from_crawler(get_crawler(settings_dict={"ZHDEDUP_EXTRACT_WORKERS": 0}))
    out = asyncio.run(pipe.process_item({"url": "https://news.163.com/19/0907/a.html", "body": PAGE.encode("utf-8")}))
    assert out["extract_version"] == EXTRACT_VERSION == extract(PAGE.encode("utf-8")).version
    shown = subprocess.run([sys.executable, "-m", "zhdedup_cli", "--version"], capture_output=True, text=True)
    assert f"extraction {EXTRACT_VERSION}" in shown.stdout + shown.stderr


def test_a_rights_reservation_leaves_the_body_for_the_rights_field() -> None:
    notice = "【本文为每日经济新闻原创作品，版权归每日经济新闻所有，未经授权不得转载。】"
    result = extract(PAGE.replace("<p>责任编辑", f"<p>{notice}</p><p>责任编辑").encode("utf-8"))
    assert result.text.split("\n") == [P1, P2, P3]
    assert result.rights == notice.strip("【】")
    assert credit_fields(["他说，未经授权的使用是不被允许的。", "声明：本文仅代表作者个人观点，不构成投资建议。"]) == {}


def test_a_datelines_source_becomes_the_source_field() -> None:
    """The dateline above the story leaves the body (extract.tails.is_dateline); the outlet it names is data."""
    page = PAGE.replace("<p>来源：每日经济新闻</p>", "<p>BUSINESS.SOHU.COM　2005年3月11日12:12 来源：[ 人民网 ]</p>")
    result = extract(page.encode("utf-8"))
    assert result.text.split("\n") == [P1, P2, P3]
    assert result.source == "人民网"
    assert credit_fields(["2005年3月11日，记者从人民网来源渠道获悉：龙湖集团将发债。"]) == {}


def test_a_forum_replys_poster_line_is_not_part_of_the_original_title() -> None:
    """A forum reply names the post it answers, who wrote it and when (原标题:【…】是大卫在2005年8月12日16:10:13发表):
    the field keeps the headline only."""
    line = "原标题:【台湾著名教育家“关于亲子”演讲精选1】是大卫在2005年8月12日16:10:13发表"
    assert credit_fields([line])["original_title"] == "台湾著名教育家“关于亲子”演讲精选1"
    assert credit_fields(["原标题：[转贴] 亲子关系十讲 由 bob 于 2006-05-23 09:02 发表"])["original_title"] == \
        "[转贴] 亲子关系十讲"
    linked = line.replace("【台湾著名教育家“关于亲子”演讲精选1】", "【<a href='5233.html'>台湾著名教育家“关于亲子”演讲精选1</a>】")
    page = ("<html><body><div>" + "".join(f"<p>{p}</p>" for p in (P1, P2, P3)) + f"<hr><p>{linked}</p></div>"
            "<ul><li><a href='5422.html'>回复：说得好</a> 馨语 09:02:51 5/23/06</li></ul></body></html>")
    assert extract(page.encode("utf-8")).original_title == "台湾著名教育家“关于亲子”演讲精选1"


def test_an_original_title_that_names_a_time_keeps_it() -> None:
    assert credit_fields(["原标题：国务院常务会议在2020年3月3日9:30召开"])["original_title"] == \
        "国务院常务会议在2020年3月3日9:30召开"
