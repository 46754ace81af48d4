"""The chrome a table layout puts above a story on a small site (extract.boilerplate): a copyright line, a bar of
the site's links, the headline over a byline whose markup leaked into its text; all above the first paragraph."""
from __future__ import annotations

import pytest

from extract.boilerplate import clean_lines, is_edge_credit
from extract.pagehead import is_head_chrome, is_headline, is_link_bar

P1 = ("一九八九年四月，我在湖南张家界开一个全省教学研究会议。按照惯例，会议安排了一天时间，让与会者去风景点游玩观赏。"
      "那一天正好是四月十五日，后来我们才知道，这是在中国历史上刻下深深痕迹的一天。")
P2 = ("张家界的春天，美得让人眩目。长期过著从家门到校门的机械生活，一下子置身于翠绿欲滴的森林，看不完的奇山异峰，"
      "山涧涓流，名花异草，我简直要玩疯了。")
BODY = [P1, P2]
MENU = ["首页", "关注中国中心（CCC）", "中国民权运动", "公民社会", "中国良心犯", "难属来信", "公民读本与先贤论著", "English"]
BAR = " ".join(MENU)


def test_a_copyright_line_and_a_bar_of_the_sites_links_above_the_story_go() -> None:
    assert clean_lines(["CopyRight@2004-2008 All rights reserved", BAR] + BODY, set(MENU)) == BODY


def test_a_line_of_long_items_is_a_link_bar_only_when_every_item_is_a_links_text() -> None:
    assert is_link_bar(BAR, set(MENU))
    assert not is_link_bar(BAR, set(MENU[:-1]))                 # one item that is no link: a line of names
    assert clean_lines([BAR] + BODY, set(MENU[:-1])) == [BAR] + BODY


def test_a_link_bar_inside_the_story_stays() -> None:
    lines = [P1, BAR, P2]                                       # below the first paragraph: not the page's head
    assert clean_lines(lines, set(MENU)) == lines


@pytest.mark.parametrize("line", [
    "版权所有 © 2005 关注中国中心 All Rights Reserved",
    "京ICP备05012345号",
])
def test_short_copyright_and_licence_lines_are_head_chrome(line: str) -> None:
    assert is_head_chrome(line, frozenset())


def test_a_byline_whose_markup_leaked_into_its_text_is_a_credit() -> None:
    byline = '作者：      size="20"       来源：     size="20"       发布日期：      7/5/2005 9:23:57 PM'
    assert is_edge_credit(byline)
    assert clean_lines([byline] + BODY) == BODY


def test_the_headline_over_its_byline_goes_with_it() -> None:
    head = ["茉莉：我是怎样卷入八九民运的", '作者：  size="20" 来源：  size="20" 发布日期：  7/5/2005 9:23:57 PM']
    assert clean_lines(head + BODY) == BODY


@pytest.mark.parametrize("first", [
    "出狱第一个夜晚：只睡着三四个小时",     # a heading over the first paragraph, no byline under it
    "“辱母案”于欢出狱的一天",
])
def test_a_heading_without_a_byline_under_it_stays(first: str) -> None:
    assert is_headline(first)
    assert clean_lines([first] + BODY) == [first] + BODY


def test_a_blog_posts_english_date_stamp_and_its_headline_go() -> None:
    from extract.article import extract
    from extract.tails import is_dateline
    paras = "".join(f"<p>\u3000\u3000{p}</p>" for p in BODY)
    page = ("<html><head><title>多维博客 » 播客热潮迅速蔓延 挑逗传统传媒业</title></head><body><div class='post'>"
            "<p>Saturday, September 10th, 2005 &nbsp; 10:56 am</p><p align=center><font size=5>播客热潮迅速蔓延 挑逗传统传媒业"
            f"</font></p>{paras}</div></body></html>")
    assert extract(page).text.split("\n") == BODY
    assert is_dateline("Sep 10, 2005") and not is_dateline("September 10th, 2005 we went to the park")


def test_a_headline_and_its_question_subtitle_over_a_newspapers_bylines_and_dateline_go() -> None:
    """A reprinted newspaper story: headline, a subtitle that asks a question, the reporters and the trainee
    (本报实习生), then the issue's date and the paper's name -- none of it is the story's text."""
    head = ["拆房屡出命案 管理形同虚设", "谁来为无序拆房“埋单”？", "本报实习生 刘国栋 周炜", "本报记者 王燕平 方云凤 柏建斌",
            "2003-7-24 钱江晚报"]
    assert clean_lines(head + BODY) == BODY


def test_a_breadcrumb_and_the_headline_over_a_dateline_go() -> None:
    head = ["搜狐首页 >> 汽车频道 >> 评测对比 >> 对比测试", "对比试车—测试昌河北斗星、爱迪尔(图)",
            "AUTO.SOHU.COM 2003年11月12日16:36 金羊网—新快报"]
    assert clean_lines(head + BODY) == BODY


def test_a_newspaper_dateline_is_the_date_and_the_papers_name_alone() -> None:
    from extract.tails import is_dateline
    assert is_dateline("2003-7-24 钱江晚报") and is_dateline("人民日报 2005年3月1日")
    assert not is_dateline("2003-7-24，钱江晚报报道了这起事故。")


def test_two_short_lines_over_a_paragraph_without_a_byline_stay() -> None:
    lines = ["春天来了", "燕子回来了", P1, P2]
    assert clean_lines(lines) == lines
