"""Widgets and forum chrome around a body (issue 29): calendars, link lists inside a body, a forum thread's
reply list and poster panel.  Judged by structure, so they hold on a site's first page.

Hand-written fixtures in the shapes seen on pages of the tune half (a blog's calendar, a 今日推荐 block set
one character a line, a BBS thread with its 回复线索 list); no site names, no third-party text.
"""
from __future__ import annotations

from extract.article import extract, untable
from extract.boilerplate import clean_lines
from extract.calendars import drop_calendars
from extract.linklists import drop_link_runs

from tests.extract.test_article_end import BODY, P1, P2, P3

CALENDAR = ["December 2006", "一 二 三 四 五 六 日", "« Apr »", "1 2 3", "4 5 6 7 8 9 10", "11 12 13 14 15 16 17",
            "18 19 20 21 22 23 24", "25 26 27 28 29 30 31"]
HEADLINES = ["央行开展逆回购操作", "多地出台楼市新政", "共享单车押金难退", "新能源车销量创新高"]


def test_a_blog_calendar_is_never_body_text() -> None:
    assert clean_lines(BODY + CALENDAR) == BODY
    assert drop_calendars(BODY[:1] + CALENDAR + BODY[1:]) == BODY


def test_numbers_in_a_body_are_not_a_calendar() -> None:
    lines = [P1, "1 2 3", P2, "2019年 8月", P3]   # one row of numbers is a list, not a calendar
    assert drop_calendars(lines) == lines


def test_a_link_list_between_paragraphs_goes_with_its_label() -> None:
    anchors = set(HEADLINES)
    vertical = ["今", "日", "推", "荐"]
    assert drop_link_runs([P1] + vertical + HEADLINES + [P2, P3], anchors) == BODY
    bullets = ["今日焦点：", "·", HEADLINES[0], "·", HEADLINES[1], "·", HEADLINES[2]]
    assert drop_link_runs([P1, P2] + bullets + [P3], anchors) == BODY


def test_a_paragraph_or_two_links_are_not_a_link_list() -> None:
    anchors = set(HEADLINES) | {P2}
    lines = [P1, P2, HEADLINES[0], HEADLINES[1], P3]
    assert drop_link_runs(lines, anchors) == lines
    assert drop_link_runs([P1, "本", "文", P2], anchors) == [P1, "本", "文", P2]   # no link list below them


REPLIES = ["回复线索：",
           "旅行中，谁忽悠了你？【新闻频道版主】08-11 16:06 298字 [4321/87]",
           "参与旅行社的一般都是弱势群体……【梅骏】08-11 16:58 138字 [140/0] 斑竹啊，你们是要故事，还是要发牢骚？"
           "【黑眼圈猫猫】08-11 17:03 0字 [127/1]",
           "我们征集故事，你们的经历，要真实的哦，有图片就更生动啦。【新闻频道版主】08-11 17:04 30字 [151/1]",
           "这几年出门逛荡时被别人骗过没有？【黑眼圈猫猫】08-11 17:09 0字 [148/0] 一把辛酸泪啊。【皮皮】08-11 17:15 80字 [176/0]",
           "主题已经关闭，停止回复．"]


def forum_page(post: list[str]) -> bytes:
    """A BBS thread page of the 2005 kind: a table layout, the poster's panel, the post, its reply list."""
    cells = "".join(f"<tr><td>{line}</td></tr>" for line in
                    ["游客 欢迎你！", "主题： 龙湖集团中期业绩怎么看？", "作者： 芊草凡凡 时间：2005-08-22 19:13:18",
                     "级别：入学了", "积分：235"] + ["<br>".join(post)] + ["您是本文第 154 个阅览者"] + REPLIES)
    return (f"<html><head><title>龙湖集团中期业绩怎么看？</title></head><body><table>{cells}</table>"
            "<div>共有帖子数1个 < 第一页 | 上一页| 1 | 下一页 | 最末页></div></body></html>").encode("utf-8")


def test_a_forum_thread_keeps_its_post_without_the_reply_list_and_the_poster_panel() -> None:
    result = extract(forum_page(BODY))
    assert result.text.split("\n") == BODY


def test_forum_chrome_lines_at_the_edges_go() -> None:
    chrome = ["级别：入学了", "积分：235", "从原子弹爆炸原理想开去 2005-09-11 18:04:42 楼主"]
    pager = "共有帖子数1个 < 第一页 \\ 上一页\\ 1 \\ 下一页 \\ 最末页>"
    assert clean_lines(chrome + BODY + [pager, "第1页/共1页 << 上一页 | 下一页 >>"]) == BODY


def test_a_table_cell_with_an_escaped_bar_or_an_open_end_is_plain_text() -> None:
    assert untable("| \\| 回复线索： | ") == "回复线索："
    assert untable(f"| {P1}") == P1


def test_a_button_under_every_post_ends_the_first_post() -> None:
    replies = [x for reply in (["无聊", "网友甲 楼主说得好，我同意你的看法，不过还可以再想想。", "← 返回......"],
                               ["我赞成", "网友乙 说得太对了，支持一下，期待下一篇文章更精彩。", "← 返回."]) for x in reply]
    lines = ["网易娱乐 > 明星俱乐部 > 明星话题 [ 精华区]　版主：[申请版主]"] + BODY + ["← 返回"] + replies
    assert clean_lines(lines) == BODY


def test_lines_repeated_in_a_body_are_not_widgets() -> None:
    code = ["try:", "data = client.lpop('test')", "return", "except Exception:", "return", "finally:", "return"]
    assert clean_lines(BODY + code) == BODY + code          # code repeats its keywords
    refrain = [P1, "归去来兮", P2, "归去来兮", P3, "归去来兮"]   # a refrain after each paragraph: no running text after
    assert clean_lines(refrain) == refrain


def test_a_long_channel_menu_with_one_longer_item_goes() -> None:
    menu = "首 页 新闻 \\ 行情 \\ 评测 \\ 调研 \\ 数码导购 \\ 学院 \\ 网吧 \\ 专题 \\ DIY \\ 招聘 \\ 二手 \\ 下载 \\ 06校园行 \\ 网址"
    assert clean_lines([menu] + BODY) == BODY
    heading = "首页 新闻 行情 评测 调研 学院 网吧 专题 招聘 二手 龙湖集团中期业绩发布会实录"   # a heading, not an item
    assert clean_lines([heading] + BODY) == [heading] + BODY
