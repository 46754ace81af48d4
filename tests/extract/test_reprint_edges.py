"""A story's edges as old portals and reprint sites leave them (extract.tails.is_edge_mark, is_lone_editor): a
page-function bar above the first paragraph, the reprint's source, the compiled-on line and a pager label under the
last one, an editor's credit alone on a line near the top, an image-credit line; each on a small synthetic page."""
from __future__ import annotations

import pytest

from extract.article import extract
from extract.tails import is_edge_mark, is_lone_editor

PARAS = [
    "刚刚结束的上海车展无疑是诸多汽车厂商展示实力的舞台，各家纷纷推出新车型，力图在中国市场占据更有利的位置。",
    "和以往车展前后国际巨头往往宣布新一轮中国投资计划不同，今年各家更关注产品本身，新车型扎堆上市，竞争十分激烈。",
    "业内人士认为，随着国内市场逐渐成熟，消费者对汽车的品质和服务提出了更高的要求，厂商必须在这两方面下功夫。",
    "目前，现代汽车在华已经组建了两家乘用车合资企业，其发展充分体现了全球技术与中国市场同步的战略思路。",
]


def page(body_lines: list[str]) -> str:
    """A small portal page: a header menu, the story's lines as paragraphs in one container, a footer."""
    return ("<html><head><title>上海车展观察</title></head><body><div class='nav'><a href='/'>首页</a> "
            "<a href='/auto/'>汽车</a></div><div class='content'>"
            + "".join(f"<p>{line}</p>" for line in body_lines)
            + "</div><div class='footer'>Copyright 2005 Example.com</div></body></html>")


def test_a_page_function_bar_above_the_first_paragraph_goes() -> None:
    bar = "页面功能【 我来说两句(0)】 【 收藏本文】 【热点排行】【推荐】【字体：大 中 小】【打印】【关闭】"
    assert extract(page([bar] + PARAS)).text.split("\n") == PARAS


@pytest.mark.parametrize("tail", [
    ["(摘自《上海社会科学院学术季刊》2000年第2期，原文约15，000字)《新华文摘》2000年第09期",
     "“民主与科学”网站(http://www.example.net)搜集整理于2002-09-25", "页:"],
    ["转自《北京科技报》"],
    ["页码：1 2 3"],
], ids=["source, compiled-on, pager", "转自", "pager with numbers"])
def test_a_reprints_source_and_pager_under_the_last_paragraph_go(tail: list[str]) -> None:
    assert extract(page(PARAS + tail)).text.split("\n") == PARAS


def test_a_lone_editor_credit_near_the_top_goes_and_fills_the_field() -> None:
    """Above the body's last 40% the 责任编辑 line is not where the story ends: only the line goes."""
    result = extract(page(PARAS[:1] + ["（责任编辑：                 黄帅               ）"] + PARAS[1:] * 2))
    assert result.text.split("\n") == PARAS[:1] + PARAS[1:] * 2
    assert result.editor == "黄帅"


def test_an_image_credit_line_goes() -> None:
    assert extract(page(PARAS[:2] + ["[图片说明1：漫画/冷洁]"] + PARAS[2:])).text.split("\n") == PARAS


@pytest.mark.parametrize("line", [
    "摘自《论语》的这句话，说明了学习的重要。",            # a sentence that quotes its source
    "他说：“资料整理于2002年，至今仍有参考价值。”",        # a sentence with a date
    "页面的功能越来越多，用户却越来越少。",
])
def test_sentences_are_no_edge_marks(line: str) -> None:
    assert not is_edge_mark(line)


@pytest.mark.parametrize("line", ["责任编辑：黄帅表示，这次改版将在下月完成。", "本报责任编辑：黄帅", "编辑部的话"])
def test_sentences_and_other_credits_are_no_lone_editor_line(line: str) -> None:
    assert not is_lone_editor(line)


@pytest.mark.parametrize("tail", [["文：眉间尺"], ["执笔人：闵乐夫 赵兰波 刘韬"], ["（袁源）"]],
                         ids=["文：", "执笔人：", "name in brackets"])
def test_a_signing_credit_under_the_last_paragraph_goes(tail: list[str]) -> None:
    assert extract(page(PARAS + tail)).text.split("\n") == PARAS


def test_an_ending_note_in_brackets_stays() -> None:
    assert extract(page(PARAS + ["（未完待续）"])).text.split("\n") == PARAS + ["（未完待续）"]


def test_a_related_link_with_its_headline_goes_inside_and_under_the_body() -> None:
    """延伸阅读：<headline> between two paragraphs is a link to another story (the story goes on under it);
    推荐阅读 <headline> under the last one too."""
    lines = PARAS[:2] + ["延伸阅读：57岁小学肄业 广西骗子演绎惊天骗局"] + PARAS[2:] + ["推荐阅读 二〇〇四年十大经理人"]
    assert extract(page(lines)).text.split("\n") == PARAS


def test_a_sentence_that_opens_with_a_related_word_stays() -> None:
    lines = PARAS[:2] + ["延伸阅读 是这家书店的特色服务，读者可以借阅相关书籍。"] + PARAS[2:]
    assert extract(page(lines)).text.split("\n") == lines
