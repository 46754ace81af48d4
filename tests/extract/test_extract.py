"""Body extraction: filters pinned on real lines, encodings, broken HTML, binary/empty/huge input, pipeline."""
from __future__ import annotations

import asyncio

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extract.article import NotArticle, extract
from benchmarks.shared_data import HTML_DIR
from extract.boilerplate import clean_lines, clean_text
from extract.encoding import choose_encoding, decode
from pipelines.extract import ExtractPipeline

ROOT = Path(__file__).resolve().parents[2]
DATA = HTML_DIR

# Real article paragraphs (from tests_163_1 / tests_thepaper_1 gold bodies).
P1 = ("2019年，龙湖集团即将迎来赴港上市10周年。十年前带领龙湖集团成功赴港上市并跻身内地女首富的吴亚军，"
      "在前不久召开的中期业绩会上表示，“对一家上市公司来说，没有故事就是好故事，龙湖没有故事”。")
P2 = ("近日，龙湖集团公布了2019年中期业绩报告。上半年，龙湖实现合约销售金额1056.2亿元，同比增长8.8%；"
      "营业额385.7亿元，同比增长42.2%；归属于股东的净利润为63.1亿元，核心溢利为47.0亿元，同比增长26%。")
P3 = "对以租金为主要盈利来源的共享充电宝行业，上调价格无疑是一针强心剂。刘颖介绍说，目前共享充电宝市场日均订单量保持在3000万左右。"


def page(*paras: str, head: str = "", nav: str = "<div><a href='/'>首页</a> <a href='/n'>新闻</a></div>") -> str:
    """A small news page around the given paragraphs."""
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f"<html><head>{head}<title>龙湖集团“暗伤”曝露_网易新闻</title></head><body>{nav}"
            f"<div class='post_text'><h1>多地项目连环爆雷</h1>{body}</div>"
            "<div class='footer'>网易公司版权所有 &copy;1997-2019</div></body></html>")


# --- boilerplate filter, pinned on real lines -------------------------------------------------

@pytest.mark.parametrize("junk", [
    "（原标题：多地项目连环爆雷 狂奔的龙湖集团“暗伤”曝露？）",
    "本文原标题：《定了！广州南沙邮轮母港即将开通！地铁直达+无敌免税城......》",
    "网友评论仅供其表达个人看法，并不表明网易立场。",
    "扫描下方二维码解锁更多技能",
    "您所在的位置：首页 > 新闻中心 > 正文",
    "字号：大 中 小",
    "图集",
    "加载更多",
    "▲广州日报全媒体图片记者黎旭阳、李妍摄",
    "您的浏览器暂时无法播放此视频.",
    "本文为CSDN原创文章，未经允许不得转载，如需转载请联系market#csdn.net(#换成@)",
    "免责声明：自媒体综合提供的内容均源自自媒体，版权归原作者所有，转载请联系原作者并获许可。",
])
def test_junk_lines_are_removed_anywhere(junk: str) -> None:
    assert clean_lines([P1, junk, P2]) == [P1, P2]


@pytest.mark.parametrize("credit", [
    "本文来源：证券市场红周刊 责任编辑：杨倩_NF4425",
    "新京报记者 陆一夫",
    "编辑 刘晓阳 校对 李铭",
    "责任编辑：霍琦",
    "（责任编辑： HN666）",
    "采写：南都记者 余毅菁 向雪妮",
    "医技药剂党支部、药剂科供稿 摄影/张艳 编辑/苏芳",
])
def test_credit_lines_are_removed_at_the_end(credit: str) -> None:
    assert clean_lines([P1, P2, credit]) == [P1, P2]


@pytest.mark.parametrize("byline", ["【文/观察者网专栏作者 王文】", "执笔/叨叨姐、胡一刀&李小飞刀", "原创： 路闻卓立编译 人民币交易与研究"])
def test_bylines_are_removed_at_the_start(byline: str) -> None:
    assert clean_lines([byline, P1, P2]) == [P1, P2]


@pytest.mark.parametrize("sentence", [
    P3,
    "这也意味着，只要数据来源未经用户授权，都存在法律风险。",
    "本次大会共收到学术论文（含摘要）300余篇，与会专家学者作了“学术论文写作技巧及编辑”等专题报告。",
    "南都记者从江门蓬江警方了解到，为了防止更多人落入电诈骗局，蓬江公安把反诈宣传送进社区。",
    "记者通过电子邮件联系了富士康，截至发稿时，尚未收到回应。",
    "编辑部的同事们说，来源可靠的消息才值得报道。",
])
def test_body_sentences_that_mention_credits_stay(sentence: str) -> None:
    for lines in ([sentence, P1, P2], [P1, sentence, P2], [P1, P2, sentence]):
        assert clean_lines(lines) == lines


def test_related_block_is_cut_but_a_mid_body_heading_is_not() -> None:
    related = ["延伸阅读", "张文宏:上海零新增我很担心 这么多人进来怎会是零", "李克强：现在看来最终战胜疫情的曙光就要出现了"]
    assert clean_lines([P1, P2, P3] + related) == [P1, P2, P3]
    assert clean_lines(["业绩会突现业主维权插曲", P1, P2, P3]) == ["业绩会突现业主维权插曲", P1, P2, P3]


@pytest.mark.parametrize("junk", [
    "【 打印本页;>)】【关闭窗口;>)】",
    "图为山西品牌丝路行（南美站）启动仪式。（刘通摄）",
    "山西品牌丝路行启动仪式现场（刘通 摄）",
])
def test_print_bars_and_captions_are_removed_anywhere(junk: str) -> None:
    """Lines seen on tune-half pages only (bench_extraction --split tune)."""
    assert clean_lines([P1, junk, P2]) == [P1, P2]


@pytest.mark.parametrize("tail", [
    ["[责任编辑：刘斌]", "好文", "钦佩", "喜欢", "泪奔", "可爱", "思考"],
    ["采写：南都记者 余毅菁 向雪妮", "作者：余毅菁 向雪妮返回富达，查看更多", "香港警方：8.31示威行动未发生致命事件，谴责造谣者",
     "港铁公司车务营运总监表示，8月31日晚，港铁公司于22点53分启动疏散程序。", ",南方都市报"],
    ["地 址：北京市朝阳区大屯路甲11号", "邮政编码：100101", "电 话：010-64870663"],
])
def test_end_of_article_widgets_are_cut(tail: list[str]) -> None:
    """Reaction buttons, a '查看更多' credit followed by related news, contact lines after the body."""
    assert clean_lines([P1, P2, P3] + tail) == [P1, P2, P3]


def test_timestamp_and_source_under_the_headline_go_a_signing_date_stays() -> None:
    html = page(P1, P2, "2012年6月24日").replace("<h1>多地项目连环爆雷</h1>", "<h1>多地项目连环爆雷</h1><p>2020年09月11日 18:05</p><p>来源：商讯</p>")
    text = extract(html.encode("utf-8")).text
    assert text.split("\n") == [P1, P2, "2012年6月24日"]


def test_back_to_home_link_is_cut_from_the_last_line() -> None:
    assert clean_lines([P1, P2 + "返回腾讯网首页>>"]) == [P1, P2]


def test_novel_pirate_junk_is_removed_inside_lines() -> None:
    text = ("手机用户请浏览m.biquge.com阅读，更优质的阅读体验。\n上一章 目录 下一章\n"
            "话说天下大势，分久必合，合久必分。（本章未完，点击下一页继续阅读）\n上一章 目录 下一章")
    assert clean_text(text) == "话说天下大势，分久必合，合久必分。"


# --- encodings ---------------------------------------------------------------------------------

def test_gbk_bytes_declared_gb2312_decode_as_gb18030() -> None:
    html = page(P1, "朱镕基第二次给他们写信。" * 5, head='<meta charset="gb2312">')  # 镕 is GBK, not GB2312
    result = extract(html.encode("gbk"))
    assert result.encoding == "gb18030"
    assert "朱镕基" in result.text and "\ufffd" not in result.text


def test_http_header_charset_is_used_when_meta_is_missing() -> None:
    html = page(P1, P2)
    result = extract(html.encode("gb18030"), headers={"Content-Type": "text/html; charset=GBK"})
    assert result.encoding == "gb18030" and P1 in result.text


def test_big5_page() -> None:
    trad = "龍湖集團即將迎來赴港上市十週年，董事長在業績會上表示公司沒有故事就是好故事。"
    html = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=big5"><title>新聞</title>'
            f"</head><body><div class='article'><p>{trad}</p><p>{trad.replace('龍湖', '華潤')}</p></div></body></html>")
    result = extract(html.encode("big5"))
    assert result.encoding == "big5hkscs" and trad in result.text


def test_big5_bytes_declared_gbk_are_read_as_big5() -> None:
    trad = "龍湖集團即將迎來赴港上市十週年，董事長在業績會上表示公司沒有故事就是好故事。香港特別行政區政府今日公佈新措施。"
    html = f"<html><head><meta charset='gbk'></head><body><div><p>{trad}</p><p>{trad}</p></div></body></html>"
    result = extract(html.encode("big5"))
    assert result.encoding == "big5hkscs" and trad in result.text


def test_wrong_meta_utf8_bytes_declared_gb2312() -> None:
    raw = (DATA / "gne" / "tests_people_1.html").read_bytes()
    assert b"charset=GB2312" in raw[:300]
    result = extract(raw)
    assert result.encoding == "utf-8"
    assert "纸上得来终觉浅，绝知此事要躬行。" in result.text


def test_undeclared_gb2312_page_from_the_shared_data() -> None:
    raw = (DATA / "trafilatura_zh" / "archive.org.he.xinhuanet.com.25340717.html").read_bytes()
    text, encoding = decode(raw)
    assert encoding == "gb18030" and "\ufffd" not in text


def test_bom_wins() -> None:
    assert choose_encoding(b"\xef\xbb\xbf<html>" + P1.encode("utf-8"), {"content-type": "text/html; charset=gbk"}) == "utf-8-sig"


# --- broken HTML, binary, empty, huge --------------------------------------------------------------

def test_stray_html_end_tag_before_the_article_is_repaired_without_html5lib() -> None:
    html = ("<html><head><title>通知</title></head><body><div class='nav'>首页 机构设置</div></html>"
            f"<div id='zoom'><p>{P1}</p><p>{P2}</p><p>{P3}</p></div></body></html>")
    result = extract(html.encode("utf-8"))
    assert result.method.startswith("lxml-endtags")   # lxml without the stray end tags: ~10x cheaper than html5lib
    assert P1 in result.text and P2 in result.text


def test_a_script_above_the_doctype_does_not_lose_the_body() -> None:
    html = ("<script>function f() { alert('请输入用户名'); }</script>\n<!DOCTYPE HTML PUBLIC -//W3C//DTD HTML 4.01//EN>"
            "<html><head><title>通知</title><cms_include:style></head><body><div class='nav'>首页 机构设置</div>"
            f"<div id='zoom'><p>{P1}</p><p>{P2}</p><p>{P3}</p></div></body></html>")
    result = extract(html.encode("utf-8"))   # libxml2 keeps only <head> here (a sohu.com page of 2005)
    assert result.method.startswith("lxml-endtags")
    assert P1 in result.text and P3 in result.text


def test_a_link_whose_text_holds_escaped_brackets_is_still_a_link_line() -> None:
    from extract.article import unlink
    links = " · ".join(f"[\\[幻灯\\]美女别样景 人体摄影背后是什么？{i}](http://cn.rd.example.com/s/{i}.html)" for i in range(8))
    lines, density = unlink(f"{P1}\n· {links}")
    assert lines == [P1] and density > 0.5


def test_a_link_whose_address_has_a_space_is_still_a_link_line() -> None:
    from extract.article import unlink
    from extract.tails import drop_headline_marks
    lines, density = unlink(f"{P1}\n[搜狐商城](http://store.sohu.com/ )\n【[我要“揪”错](htt p://check.news.sohu.com/x.php?t=1)】")
    assert drop_headline_marks(lines) == [P1] and density > 0   # a dropped headline leaves a mark for the filter


def test_binary_content_is_rejected_with_a_reason() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    with pytest.raises(NotArticle, match="binary content \\(png image\\)"):
        extract(png)
    with pytest.raises(NotArticle, match="binary content"):
        extract(bytes(range(256)) * 40)


@pytest.mark.parametrize("raw", [b"", b"   \n", b"<html><head></head><body></body></html>"])
def test_empty_page(raw: bytes) -> None:
    with pytest.raises(NotArticle):
        extract(raw)


def test_ten_megabyte_page_is_truncated_and_fast() -> None:
    script = "<script>var ads = ['广告位招租'];</script>\n" * 100_000
    junk = "<div class='ad'><a href='/x'>广告位招租</a></div>\n" * 150_000
    html = page(P1, P2, P3).replace("<head>", "<head>" + script)
    html = html.replace("</body>", junk + "</body>").encode("utf-8")
    assert len(html) > 10_000_000
    t0 = time.perf_counter()
    result = extract(html)
    assert time.perf_counter() - t0 < 20
    assert P1 in result.text and "广告位招租" not in result.text


def test_a_huge_gbk_page_with_a_stray_html_end_tag_is_repaired_by_lxml() -> None:
    """A 2 MB page (scripts cut, then parsed once more by lxml): a clear result without html5lib's seconds."""
    script = "<script>var ads = ['广告位招租'];</script>\n" * 60_000
    html = (f"<html><head><meta charset='gbk'><title>通知</title>{script}</head><body><div class='nav'>首页</div>"
            f"</html><div id='zoom'><p>{P1}</p><p>{P2}</p><p>{P3}</p></div>{script}</body></html>").encode("gbk")
    assert len(html) > 2_000_000
    result = extract(html)
    assert result.method.startswith("lxml-endtags") and result.encoding in ("gbk", "gb18030")
    assert P1 in result.text and "广告位招租" not in result.text


@pytest.mark.parametrize("html,reason", [
    ("<html><head><title>404 页面不存在</title></head><body><h1>404</h1><p>抱歉，您访问的页面不存在或已被删除！</p>"
     "<a href='/'>返回首页</a></body></html>", "soft_404"),
    ("<html><body><div class='article'><p>本文为会员专享内容，请登录后查看全文。</p></div></body></html>", "login_wall"),
])
def test_not_found_and_login_wall_pages(html: str, reason: str) -> None:
    with pytest.raises(NotArticle) as err:
        extract(html.encode("utf-8"))
    assert err.value.reason == reason


def test_list_page_from_the_shared_data_has_no_body() -> None:
    with pytest.raises(NotArticle, match="list"):
        extract((DATA / "gne" / "test_list_page_163_2.html").read_bytes())


# --- site profiles ---------------------------------------------------------------------------------

def test_wechat_body_is_taken_from_js_content() -> None:
    result = extract((DATA / "gne" / "tests_wechat_2.html").read_bytes())
    assert result.method == "selector:wechat"
    assert "contextlib.ExitStack" in result.text and "摄影：产品经理" not in result.text


def test_novel_profile_selector_and_pirate_junk() -> None:
    chapter = "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。"
    html = ("<html><body><div id='list'><a href='/1'>第一回</a><a href='/2'>第二回</a></div>"
            "<div class='bottem'>上一章 目录 下一章</div><div id='content'>手机用户请浏览m.biquge.com阅读，更优质的阅读体验。"
            f"<br>{chapter}<br>{chapter}<br>（本章未完，点击下一页继续阅读）</div></body></html>")
    result = extract(html.encode("utf-8"), profile={"body_selector": "#content"})
    assert result.method == "selector:profile"
    assert result.text == f"{chapter}\n{chapter}"


# --- accuracy on the gold bodies ---------------------------------------------------------------------

def test_gold_average_f1_and_no_page_much_worse_than_trafilatura() -> None:
    from benchmarks.bench_extraction import gne_gold, plain, prf, product
    scores = []
    for name, expected in gne_gold().items():
        raw = (DATA / "gne" / f"{name}.html").read_bytes()
        ours, base = prf(expected, product(raw))[2], prf(expected, plain(raw))[2]
        scores.append(ours)
        assert ours >= base - 0.02, name
    assert len(scores) == 44
    assert sum(scores) / len(scores) >= 0.95


# --- Scrapy pipeline and CLI ---------------------------------------------------------------------

def test_pipeline_fills_fields_keeps_body_and_counts() -> None:
    from scrapy.utils.test import get_crawler

    from pipelines.drops import SkippedItem

    crawler = get_crawler(settings_dict={"EXTRACT_MIN_CHARS": 30, "ZHDEDUP_EXTRACT_WORKERS": 0})
    pipe = ExtractPipeline.from_crawler(crawler)
    assert pipe.min_chars == 30 and pipe.fast is False
    item = {"url": "https://news.163.com/19/0907/a.html", "body": page(P1, P2).encode("gbk"),
            "headers": {"content-type": "text/html; charset=gbk"}}
    out = asyncio.run(pipe.process_item(item))
    assert out["body"] and P1 in out["text"] and out["encoding"] == "gb18030"
    assert out["title"] and "language" in out and "published" in out and "author" in out
    assert crawler.stats.get_value("extract/ok") == 1
    with pytest.raises(SkippedItem, match="^no article body: binary content") as err:
        asyncio.run(pipe.process_item({"url": "https://x/y.png", "body": b"\x89PNG\r\n\x1a\n" + b"\x00" * 100,
                                       "headers": {}}))
    assert err.value.reason == "binary"
    assert crawler.stats.get_value("extract/dropped/binary") == 1


@pytest.mark.parametrize("module", ["extract", "pipelines.extract"])
def test_cli_json_and_text(tmp_path: Path, module: str) -> None:
    f = tmp_path / "a.html"
    f.write_bytes(page(P1, P2).encode("utf-8"))
    out = subprocess.run([sys.executable, "-m", module, str(f), "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    assert data["text"] == f"{P1}\n{P2}" and set(data) >= {"title", "text", "date", "author"}
    out = subprocess.run([sys.executable, "-m", module, str(f)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().split("\n") == [P1, P2]


def test_cli_user_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = subprocess.run([sys.executable, "-m", "extract", str(tmp_path / "nope.html")], cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "cannot read" in missing.stderr
    (tmp_path / "e.html").write_bytes(b"")
    empty = subprocess.run([sys.executable, "-m", "extract", str(tmp_path / "e.html")], cwd=ROOT,
                           capture_output=True, text=True)
    assert empty.returncode == 2 and empty.stderr.startswith("no article body (empty)")


# --- the filter never removes a gold body line ----------------------------------------------------

def test_filter_keeps_every_line_of_every_gold_body() -> None:
    """All 1,141 hand-picked article lines survive the post-filter unchanged."""
    from benchmarks.bench_extraction import gne_gold
    total = 0
    for name, gold in gne_gold().items():
        lines = [line for line in gold.split("\n") if line.strip()]
        total += len(lines)
        assert clean_lines(lines) == lines, name
    assert total > 1000


def test_citations_and_split_punctuation_are_rejoined() -> None:
    assert clean_lines(["1975年出生于新加坡，家里有一个姐姐", "[13]", "。", P1]) == ["1975年出生于新加坡，家里有一个姐姐。", P1]


def test_navigation_runs_at_the_edges_are_trimmed_only_when_link_heavy() -> None:
    from extract.boilerplate import trim_nav_runs
    nav = ["首页", "现金宝", "基金超市", "基金决策宝", "安全保障", "我的资产", "资讯正文"]
    assert trim_nav_runs(nav + [P1, P2], anchors=set(nav)) == [P1, P2]
    assert trim_nav_runs([P1, P2] + nav, anchors=set(nav)) == [P1, P2]
    poem = ["明者处事", "莫尚於中", "优哉游哉", "与道相从", "首阳为拙", "柳惠为工"]
    assert trim_nav_runs(poem + [P1], anchors=set()) == poem + [P1]


def test_wellformed_page_is_not_reparsed() -> None:
    assert not extract(page(P1, P2, P3).encode("utf-8")).method.startswith("html5lib")


def test_pirate_novel_chapter_generic_path_drops_ads_and_navigation() -> None:
    from benchmarks.bench_extraction import novel_pages
    name, raw, gold = novel_pages(1)[0]
    result = extract(raw)
    assert result.encoding == "gb18030"
    for ad in ("手机用户请浏览", "一秒记住", "本章未完", "上一章", "章节目录", "加入书签"):
        assert ad not in result.text
    assert result.text.split("\n")[-3:] == gold.split("\n")[-3:]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_novel_ad_pattern_needs_a_novel_word(data):
    """strip_novel_ads skips lines without NOVEL_WORDS: every ad its patterns remove must contain one."""
    from extract.boilerplate import NOVEL_INLINE, NOVEL_WORDS

    for pattern in NOVEL_INLINE:
        ad = data.draw(st.from_regex(pattern, fullmatch=True))
        assert NOVEL_WORDS.search(ad), (pattern.pattern, ad)


def test_meta_dates_agree_with_htmldate_on_real_pages():
    """page_date reads publish-date <meta> tags before htmldate: only where both give the same date."""
    from extract.article import htmldate_date, load_page, meta_date

    pages = sorted(HTML_DIR.glob("**/*.htm*"))
    if not pages:
        pytest.skip(f"no shared HTML pages in {HTML_DIR}")
    dated = 0
    for path in pages:
        tree = load_page(path.read_bytes(), {}).tree
        quick = meta_date(tree)
        if quick is not None:
            dated += 1
            assert quick == htmldate_date(tree, ""), path.name
    assert dated >= 10


def test_a_long_paragraph_with_a_pasted_disclaimer_keeps_its_text():
    """A story in one long paragraph that quotes a reprint disclaimer (版权归原作者所有) loses that sentence,
    not the whole story (it used to come out as its date line only: 'no article body')."""
    story = "近期，某区人民检察院依法提起公诉的一宗案件成功获判，该院首次提出的量刑建议也被采纳。" * 12
    disclaimer = "（注：本微信中部分图片来源于网络，版权归原作者所有。如有问题请联系我们！）"
    body = story + disclaimer + "合上案卷，承办检察官发现，每一个案件背后都有一个需要保护的孩子。" * 3
    page = (f"<html><head><meta charset='utf-8'><title>标题</title></head><body><div class='nav'>首页 国内</div>"
            f"<article><h1>标题</h1><p class='date'>2024-05-20</p><p>{body}</p></article></body></html>")
    text = extract(page.encode("utf-8")).text
    assert "量刑建议也被采纳" in text and "需要保护的孩子" in text
    assert "版权归原作者所有" not in text


def test_a_page_that_is_no_article_is_not_dated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The date (htmldate, ~10% of an extraction) is read only once the page is known to be an article: a crawl
    meets many list and error pages."""
    import extract.article as article
    dated: list[str] = []
    real = article.page_date
    monkeypatch.setattr(article, "page_date", lambda tree, url: dated.append(url) or real(tree, url))
    links = "".join(f"<li><a href='/n/{i}.html'>第{i}条新闻的标题在这里</a></li>" for i in range(40))
    with pytest.raises(NotArticle):
        extract(f"<html><body><ul>{links}</ul></body></html>".encode("utf-8"), url="https://a.example/list")
    assert dated == []
    story = "".join(f"<p>{'这是一段足够长的新闻正文，用来说明文章的日期照常读取。' * 3}</p>" for _ in range(4))
    extract(f"<html><body><article>{story}</article></body></html>".encode("utf-8"), url="https://a.example/n/1")
    assert dated == ["https://a.example/n/1"]
