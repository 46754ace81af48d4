"""Where an article ends (issue 29): structural rules that hold on a site's first page, no site names.

Hand-written fixtures in the shapes seen on pages of sites the rules were never tuned on: recommendation
lists of date-stamped headlines, inline related lists, share bars and disclaimers, copyright notices.
"""
from __future__ import annotations

import pytest

from extract.article import extract
from extract.boilerplate import clean_lines, cut_tail

P1 = ("2019年，龙湖集团即将迎来赴港上市10周年。十年前带领龙湖集团成功赴港上市并跻身内地女首富的吴亚军，"
      "在前不久召开的中期业绩会上表示，“对一家上市公司来说，没有故事就是好故事，龙湖没有故事”。")
P2 = ("近日，龙湖集团公布了2019年中期业绩报告。上半年，龙湖实现合约销售金额1056.2亿元，同比增长8.8%；"
      "营业额385.7亿元，同比增长42.2%；归属于股东的净利润为63.1亿元，核心溢利为47.0亿元，同比增长26%。")
P3 = "对以租金为主要盈利来源的共享充电宝行业，上调价格无疑是一针强心剂。刘颖介绍说，目前共享充电宝市场日均订单量保持在3000万左右。"
BODY = [P1, P2, P3]

TEASER = "这是一条推荐新闻的导语，点击标题可以阅读全文。"


@pytest.mark.parametrize("tail", [
    # headlines (their links dropped) leave their date and time on lines of their own
    ["为你推荐", "2019-09-30", "07:42", "2019-09-30", "07:40", "2019-09-29", "22:10"],
    # headline, date, time, one-line teaser under each
    ["相关阅读", "央行开展逆回购操作", "2019-09-30", "07:42", TEASER, "多地出台楼市新政", "2019-09-30", "07:40", TEASER],
    # a date and time at the end of each headline line, no heading above them
    ["央行开展逆回购操作 2018-03-02 08:58:39", "多地出台楼市新政 2018-03-02 08:50:12",
     "共享单车押金难退 2018-03-01 18:58:39", "猜你喜欢", "新能源车销量创新高 2018-03-01 17:00:00"],
    # no heading at all, bracketed dates in front of the headlines
    ["[2005-08-21]    为什么总要面对呢", "[2005-08-17]    无序列表", "[2005-08-02]    谁来补偿"],
])
def test_dated_headline_lists_after_the_body_are_cut(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


@pytest.mark.parametrize("head", ["为你推荐", "新闻评论", "热帖", "热词", "重点推荐", "编辑推荐", "精品推荐", "推荐文章"])
def test_recommendation_headings_cut_the_block_below(head: str) -> None:
    assert clean_lines(BODY + [head, "央行开展逆回购操作", "多地出台楼市新政", "共享单车押金难退"]) == BODY


@pytest.mark.parametrize("tail", [
    ["相关报道： · 富夫妻望子成龙假离婚 三月后丈夫另娶（2005-04-03 17:19PM） · 沪银行关照直系亲属房贷记录（2005-04-01）"],
    ["分享：", "微信", "微博", "时报观察", "1、央行开展逆回购操作", "2、多地出台楼市新政", TEASER],
    ["声明：本文仅代表作者个人观点，不构成投资建议。", "时报观察", "1、央行开展逆回购操作", "2、多地出台楼市新政"],
    ["来源：新华网", "发送给朋友", "打印本文", "返回页首 | 关闭窗口", "火爆招商信息", "风湿、类风湿获重大突破", "老婆口述:老公越来越棒"],
    ["（原标题：龙湖集团“暗伤”曝露）", "热门", "央行开展逆回购操作", "多地出台楼市新政", TEASER],
    ["责任编辑：王鹏", "时报观察", "1、央行开展逆回购操作", "2、多地出台楼市新政", "3、共享单车押金难退"],
    ["反侵权公告：", "根据《中华人民共和国著作权法》等法律法规，未经书面许可，擅自转载本报社作品的，将涉嫌侵犯著作权人合法权益。",
     "一、任何单位或个人使用本报社的原创内容，必须事先取得本报社书面授权；"],
])
def test_share_disclaimer_and_inline_related_lines_end_the_article(tail: list[str]) -> None:
    """The closing line and everything after it go, not only the line itself."""
    assert clean_lines(BODY + tail) == BODY


def test_dates_inside_the_body_stay() -> None:
    """A chronology written with 年月日, or dated lines before most of the text, is body."""
    chronology = ["2013年3月30日", "首次举办个人演唱会。", "2016年1月20日", "获得金唱片奖。", "2017年5月6日", "担任主持人。"]
    assert cut_tail(BODY[:1] + chronology + BODY[1:]) == BODY[:1] + chronology + BODY[1:]
    dated_first = ["2019-09-30", "07:42", "2019-09-30 08:00", "2019-10-01"] + BODY
    assert cut_tail(dated_first) == dated_first


@pytest.mark.parametrize("mark", ["分享：", "来源：新华网", "责任编辑：王鹏", "（原标题：龙湖集团“暗伤”曝露）"])
def test_a_closing_line_before_most_of_the_text_does_not_cut_it(mark: str) -> None:
    """A share bar or a credit above the article is not its end: more running text follows than precedes it."""
    lines = ["快讯", mark, P1, P2, P3]
    assert cut_tail(lines) == lines


def test_recommendation_block_on_a_first_seen_page_without_article_tag() -> None:
    """A small site's page, no <article>, no template: the sibling list block is not body."""
    recs = "".join(f"<li><a href='/n/{i}.html'>推荐新闻标题第{i}条</a><span>2019-09-3{i % 2}</span><span>0{i}:42</span>"
                   f"<p>{TEASER}</p></li>" for i in range(6))
    html = ("<html><head><title>龙湖集团“暗伤”曝露_小站新闻</title></head><body>"
            "<div class='top'><a href='/'>首页</a> <a href='/n'>新闻</a></div>"
            "<div class='main'><h1>龙湖集团“暗伤”曝露</h1>" + "".join(f"<p>{p}</p>" for p in BODY) +
            "<div class='rec'><h3>为你推荐</h3><ul>" + recs + "</ul></div></div>"
            "<div class='foot'>Copyright © 2019 小站新闻 京ICP备12345678号</div></body></html>")
    assert extract(html.encode("utf-8")).text.split("\n") == BODY


def test_column_labels_above_a_tail_go_with_it_a_signing_date_stays() -> None:
    """NetEase-style: 重点推荐 / 证券要闻 labels, then a keyword list of dated headlines."""
    tail = ["重点推荐", "证券要闻", "行业动态", "公司新闻", "关键词阅读：", "保监会发布员工持股计划有关事项 2015/07/03",
            "保监会规范险企员工持股计划 2015/07/03", "保监会推进互联网险企试点 2015/07/03", "0人参与", "跟贴热词："]
    assert clean_lines(BODY + tail) == BODY
    assert cut_tail(BODY + ["2012年6月24日"] + tail[4:]) == BODY + ["2012年6月24日"]


def test_channel_menus_above_the_first_paragraph_go_a_list_of_names_in_the_body_stays() -> None:
    menus = ["雅虎中国 - 体育 - 娱乐 - 房产 - 汽车 - 电邮", "首页 滚动 国内 国际 财经 社会 声音 专题 两性 幻灯",
             "首 页 新闻 \\ 行情 \\ 评测 \\ 调研 \\ 数码导购 \\ 学院"]
    assert clean_lines(menus + BODY) == BODY
    names = "获奖者 张三 李四 王五 赵六 钱七 孙八"
    assert clean_lines([P1, names, P2, P3]) == [P1, names, P2, P3]


def test_a_column_of_numbered_headlines_ends_the_article_numbered_points_in_the_body_stay() -> None:
    column = ["时报观察", "1、央行开展逆回购操作", "2、多地出台楼市新政", "3、共享单车押金难退", "4、新能源车销量创新高"]
    assert clean_lines(BODY + column) == BODY
    points = ["主要措施", "1、加强市场监管，规范收费行为；", "2、完善退费机制，保障用户权益；", "3、推动行业自律。"]
    assert clean_lines(BODY + points) == BODY + points


def exhaustive_cut(lines: list[str]) -> list[str]:
    """cut_tail as it was before it stopped early: every start read, the first that ends the article wins."""
    from extract.boilerplate import is_page_notice, running_chars, tail_labels, tail_starts
    before = [0]
    for line in lines:
        before.append(before[-1] + running_chars(line))
    for at in sorted(set(tail_starts(lines))):
        if before[at] >= max(1, before[-1] - before[at]) or (before[at] and is_page_notice(lines[at])):
            return lines[:tail_labels(lines, at)]
    return lines


def test_cut_tail_stopping_early_cuts_where_reading_every_start_cuts() -> None:
    import random
    pool = BODY + [TEASER, "为你推荐", "相关阅读", "2019-09-30", "07:42", "央行开展逆回购操作 09-30", "时报观察",
                   "1、央行开展逆回购操作", "2、多地出台楼市新政", "3、共享单车押金难退", "回复", "← 返回", "举报",
                   "分享到：", "责任编辑：张三", "Powered by Discuz!", "央行开展逆回购操作", "[2005-08-21]    无序列表",
                   "\x00央行开展逆回购操作", "本网站使用cookie，继续浏览即代表您同意隐私政策", "07:42 多地出台楼市新政"]
    items = [["央行开展逆回购操作", "2019-09-30", "07:42", TEASER], ["多地出台楼市新政", "2019-09-30", "07:40"]]
    rng = random.Random(29)
    for _ in range(3000):   # lines and dated list items (whose first headline is found lines above its date)
        lines = [x for _ in range(rng.randint(1, 30))
                 for x in (rng.choice(items) if rng.random() < 0.2 else [rng.choice(pool)])]
        assert cut_tail(lines) == exhaustive_cut(lines), lines


@pytest.mark.parametrize("tail", [["电邮新闻头条新闻就在您的每日新闻信里"], ["订阅我们的Newsletter"], ["网页内容仅为个人意见"],
                                  ["以上内容仅代表作者个人观点"]])
def test_a_newsletter_prompt_or_a_personal_opinion_notice_under_the_body_goes(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


def test_a_paragraph_that_names_a_newsletter_stays() -> None:
    lines = BODY + ["该报的电子报每天早上七点发出，订阅人数已经超过十万，编辑部为此增加了两名值班编辑。"]
    assert clean_lines(lines) == lines


def test_a_recommendation_heading_over_labelled_columns_ends_the_article_with_the_labels_above_it() -> None:
    """重点推荐 over columns (a label, then its two headlines, undated): the portal's app promotion labels above it go
    with it, whatever the page's links are."""
    tail = ["财经频道", "会赚钱的客户端：", "重点推荐", "更多精彩资讯请点击 股票频道", "证券要闻", "沪指3周重挫近30% 券商齐聚",
            "五大招救市 千亿资金输血市场", "行业动态", "航空股迎来旺季 业绩向好", "光伏产业获政策扶持", "公司新闻",
            "老窖换届新目标遭质疑", "家电厂商抱团战互联网电视"]
    assert clean_lines(BODY[:2] + tail) == BODY[:2]
