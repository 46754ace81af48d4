"""An article's edges on a site seen for the first time (extract.tails): page-function bars, bulleted related or
comment headings, spaced-out notice headings after the body; datelines and link labels at its edges."""
from __future__ import annotations

import pytest

from extract.article import extract
from extract.boilerplate import clean_lines
from extract.tails import compact_heading, is_dateline, is_function_bar, is_link_label

P1 = ("2019年，龙湖集团即将迎来赴港上市10周年。十年前带领龙湖集团成功赴港上市并跻身内地女首富的吴亚军，"
      "在前不久召开的中期业绩会上表示，“对一家上市公司来说，没有故事就是好故事，龙湖没有故事”。")
P2 = ("近日，龙湖集团公布了2019年中期业绩报告。上半年，龙湖实现合约销售金额1056.2亿元，同比增长8.8%；"
      "营业额385.7亿元，同比增长42.2%；归属于股东的净利润为63.1亿元，核心溢利为47.0亿元，同比增长26%。")
BODY = [P1, P2]


@pytest.mark.parametrize("tail", [
    ["页面功能 【我来说两句】【我要“揪”错】【推荐】【字体：大 中 小】【打印】 【关闭】", "精彩彩信：", "[和弦][两极]"],
    ["■相关链接", "龙湖集团中期业绩发布(07/13 08:41)龙湖集团上调全年目标"],
    ["● 我来说两句", "-- 给编辑写信", "搜狐商城"],
    ["郑 重 声 明", "1. 任何言论纯属作者个人观点，与本站无关；", "2. 禁止发表违反国家法律、法规的言论、信息；"],
    ["页:", "查看完整版本:", "社会资本与再就业", "Powered by", "Discuz! Archiver", "5.0.0"],
])
def test_function_bars_and_bulleted_or_spaced_headings_end_the_article(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


@pytest.mark.parametrize("line", [
    "BUSINESS.SOHU.COM　2005年3月11日12:12 来源：[ 人民网 ]",
    "2005-02-06 13:26更新 来源：转载文章",
    "作者：  来源：  发布日期：  7/5/2005 9:23:57 PM",
    "发表时间：",
])
def test_a_dateline_above_the_first_paragraph_goes(line: str) -> None:
    assert is_dateline(line)
    assert clean_lines([line] + BODY) == BODY


@pytest.mark.parametrize("line", [
    "发表于 2004年12月27日 12:40 - (阅读:3727;评论:63)",
    "你可以使用这个链接引用该篇文章 http://blog.example.com/tb.b?diaryID=2756656",
    "Trackback: http://tb.example.net/TrackBack.aspx?PostId=543698",
])
def test_a_posting_line_or_link_label_under_the_last_paragraph_goes(line: str) -> None:
    assert clean_lines(BODY + [line]) == BODY


@pytest.mark.parametrize("line", [
    "2005年3月11日，记者从市政府获悉，龙湖集团将于明年在香港发行债券。",   # a first paragraph that opens with a date
    "——2005年3月11日在股东大会上的讲话",                                 # a subtitle dated without a time
    "张三 2005年3月1日",                                                  # a letter's signature
])
def test_dated_sentences_and_signatures_are_not_datelines(line: str) -> None:
    assert not is_dateline(line)


@pytest.mark.parametrize("line", [
    "他在会上说：“我们要【稳增长】【调结构】【惠民生】，一个都不能少。”",   # bracketed terms inside a sentence
    "[1][2][3]",                                                          # citation markers
])
def test_bracketed_words_in_a_sentence_are_no_function_bar(line: str) -> None:
    assert not is_function_bar(line)


def test_a_sentence_with_an_address_is_no_link_label() -> None:
    assert not is_link_label("详情请见官网，地址是 http://www.example.com/notice.html")
    assert compact_heading("相关 新闻 与 评论 的 区别 在于 来源 不同 这是 正文") == "相关 新闻 与 评论 的 区别 在于 来源 不同 这是 正文"


@pytest.mark.parametrize("tail", [["推荐", "娱乐"], ["分享", "推荐", "体育", "财经"], ["理论新闻精选："]])
def test_labels_left_under_the_last_paragraph_go(tail: list[str]) -> None:
    """Widget and channel labels whose links went, and a lead-in whose list went."""
    assert clean_lines(BODY + tail) == BODY


@pytest.mark.parametrize("tail", [
    ["张三"],                                                                   # a short name signing the text
    ["圣经的原理", "环境的带领", "肢体的劝告", "行动的动机", "心中的负担", "自己的能力"],   # a form's rows
])
def test_a_signature_or_a_list_of_the_body_stays(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY + tail


STORY = [P1, P2, "对以租金为主要盈利来源的共享充电宝行业，上调价格无疑是一针强心剂，目前共享充电宝市场日均订单量保持在3000万左右。"]
TEASERS = [("央行开展千亿元逆回购操作", "央行今日开展1000亿元逆回购操作，当日无逆回购到期，实现净投放1000亿元。"),
           ("多地出台楼市调控新政策", "近期多个城市出台楼市调控新政，涉及限购、限贷、限售等多个方面的内容。"),
           ("共享单车押金退还困难", "不少用户反映共享单车押金难以退还，客服电话长期无人接听，投诉渠道不畅。")]


def small_site_page(paragraphs: list[str], teasers: list[tuple[str, str]]) -> str:
    """A small site's page without <article>: the story's paragraphs, then other stories' linked headlines with a
    one-line teaser each, in the same container."""
    return ("<html><head><title>龙湖集团中期业绩</title></head><body><div class='nav'><a href='/'>首页</a></div>"
            "<div class='main'><h1>龙湖集团中期业绩</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs)
            + "".join(f"<h3><a href='/a{i}.html'>{h}</a></h3><p>{t}</p>" for i, (h, t) in enumerate(teasers))
            + "</div><div class='footer'>Copyright 2019</div></body></html>")


@pytest.mark.parametrize("paragraphs", [STORY, STORY * 3], ids=["short story (densest block)", "long story (trafilatura)"])
def test_other_stories_with_teasers_under_the_body_are_cut(paragraphs: list[str]) -> None:
    """The teasers have the body's density; the linked headlines above them show the list."""
    assert extract(small_site_page(paragraphs, TEASERS)).text.split("\n") == paragraphs


def test_one_linked_headline_in_the_body_stays() -> None:
    """A story's single link to another story, with its text under it, is not a list of other stories."""
    lines = clean_lines(STORY[:2] + ["央行开展千亿元逆回购操作", STORY[2]], {"央行开展千亿元逆回购操作"})
    assert lines == STORY[:2] + ["央行开展千亿元逆回购操作", STORY[2]]


@pytest.mark.parametrize("tail", [
    ["打开APP阅读更多精彩内容"], ["本文来自澎湃新闻客户端"], ["扫一扫在手机打开当前页"], ["举报/反馈"],
    ["上一篇：央行开展逆回购操作", "下一篇：多地出台楼市新政"], ["标签：龙湖 地产 上市"],
])
def test_portal_and_app_closing_lines_end_the_article(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY



HEADLINES = ["央行开展逆回购操作", "多地出台楼市新政", "共享单车押金难退", "新能源车销量创新高"]
TEASER = "这是导语，讲了一些事情。"


@pytest.mark.parametrize("tail", [
    [h + " 09-30" for h in HEADLINES],
    [h + " 09-30 07:42" for h in HEADLINES],
    ["2019-09-30 " + h for h in HEADLINES],
    ["07:42 " + h for h in HEADLINES],
    [h + " 3小时前" for h in HEADLINES],
    [h + " 2019年09月30日" for h in HEADLINES],
    [x for h in HEADLINES for x in (h, "3小时前")],
], ids=["month-day", "month-day time", "date first", "time first", "relative", "年月日 after", "relative alone"])
def test_headlines_dated_in_other_ways_end_the_article(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


@pytest.mark.parametrize("item", [["{h}", TEASER, "2019-09-30"], ["{h}", TEASER, "2019-09-30", "07:42"]],
                         ids=["headline/teaser/date", "headline/teaser/date/time"])
def test_a_dated_list_goes_from_its_first_headline_above_the_teaser(item: list[str]) -> None:
    tail = [x.format(h=h) for h in HEADLINES for x in item]
    assert clean_lines(BODY + tail) == BODY


def test_a_chronology_written_in_sentences_stays() -> None:
    """Dated lines that are sentences (a comma inside) are the story's, even at its end."""
    chronology = ["2019-09-30 07:42，央行开展逆回购操作。", "2019-10-08 09:15，多地出台楼市新政。",
                  "2019-10-09 10:00，共享单车押金难退问题引起关注。"]
    assert clean_lines(BODY + chronology) == BODY + chronology


@pytest.mark.parametrize("markdown", [
    "【字体：[大](javascript:doZoom(16)) [中](javascript:doZoom(14)) [小](javascript:doZoom(12))】",
    "[<< 返回上一页](javascript:history.go(-1))",
    "【[收藏本文](<javascript:t=d.selection?(d.selection.type!='None'?d.createRange().text:''):(d.getSelection())>)】",
])
def test_links_whose_address_holds_parentheses_leave_no_markup(markdown: str) -> None:
    """A script address with parentheses (or written between angle brackets) is still a link: no ')' left over."""
    from extract.article import unlink
    lines, _ = unlink(f"{P1}\n{markdown}")
    assert not any(")" in line or "javascript" in line for line in lines)


@pytest.mark.parametrize("tail", [
    ["热门评论", "网友A：说得好", "网友B：支持"], ["全部评论(3)", "网友A：说得好"],
    ["24小时热文", "央行开展逆回购操作", "多地出台楼市新政"], ["本周排行榜", "1 央行开展逆回购操作", "2 多地出台楼市新政"],
])
def test_comment_and_ranking_headings_cut_the_block_below(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


def test_pages_parse_with_one_element_class_chosen_in_c() -> None:
    """extract.dom.HTML_PARSER: every element is an HtmlElement (no Python lookup per element proxy, which cost ~4% of
    an extraction), and the lxml.html methods the code uses still work on it."""
    import lxml.html
    from extract.dom import load
    tree = load("<html><body><form><input name='q'></form><p>正文。<a href='/x'>链接</a></p></body></html>"
                .encode("utf-8")).tree
    assert {type(el) for el in tree.iter()} == {lxml.html.HtmlElement}
    assert tree.find(".//p").text_content() == "正文。链接"


@pytest.mark.parametrize("tail", [
    ["还想看更多新闻吗？欢迎下载某某时报APP，现在看新闻还能抽奖，共9万个中奖机会等着你：", "看更多！请加入某某时报粉丝团"],
    ["#上吊 #自杀 #葫芦 #北市 #士林区"],
    ["更多精彩内容，请关注某某日报微信公众号"],
    ["您所浏览的新闻已过查询时效。建议您加入某某社付费会员找寻您要的新闻。"],
])
def test_prompts_to_the_reader_and_hashtags_under_the_story_go(tail: list[str]) -> None:
    assert clean_lines(BODY + tail) == BODY


@pytest.mark.parametrize("last", [
    "市民可下载“随申办”APP，在线预约办理相关业务，也可以拨打热线电话咨询。",
    "活动期间，欢迎市民前往现场参观体验，主办方提醒请关注天气变化，注意防暑。",
    "他说，公司会继续关注用户的反馈，下一版客户端将在月底上线。",
    "业内人士建议消费者谨慎加入各类付费会员，以免权益受损。",
])
def test_a_last_paragraph_about_an_app_or_an_account_stays(last: str) -> None:
    assert clean_lines(BODY + [last]) == BODY + [last]
