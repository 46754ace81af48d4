"""The densest block, taken when trafilatura's body is doubtful, loses the navigation run at its edges as trafilatura's
body does (extract.pagehead.trim_nav_runs): a small site's content cell holds the story and then its channel links and
labels, one short line each, with no heading above them."""
from __future__ import annotations

from extract.article import extract

PARAS = ["市统计局昨日发布数据，上半年全市地区生产总值同比增长百分之六点八，增速比一季度加快零点三个百分点。",
         "其中，第三产业增加值增长百分之八点一，对经济增长的贡献率超过六成，消费对增长的拉动作用继续增强。",
         "统计局有关负责人表示，下半年经济运行总体平稳的基础较为牢固，但外部环境仍有不确定性，需要继续稳定预期。"]
NAV = [("label", "财经频道"), ("a", "股市行情"), ("a", "基金净值查询"), ("label", "热门栏目"), ("a", "理财产品排行"),
       ("a", "房贷利率计算器"), ("label", "客户端下载")]


def page(under: list[tuple[str, str]] = NAV) -> str:
    nav = "".join(f"<div><a href='/x{i}'>{t}</a></div>" if k == "a" else f"<div>{t}</div>" for i, (k, t) in enumerate(under))
    return ("<html><head><title>上半年全市经济同比增长6.8%</title></head><body><div class='top'><a href='/'>首页</a></div>"
            "<table><tr><td><div class='c'>" + "".join(f"<p>{p}</p>" for p in PARAS) + nav +
            "</div></td><td><ul>" + "".join(f"<li><a href='/n{i}'>侧栏新闻标题第{i}条</a></li>" for i in range(12))
            + "</ul></td></tr></table></body></html>")


def test_the_links_and_labels_under_the_densest_block_go() -> None:
    result = extract(page())
    assert result.method == "density"
    assert result.text.split("\n") == PARAS


def test_short_lines_with_few_links_under_the_story_stay() -> None:
    """Six short lines of which fewer than two in five are links: a list of the story's own, not navigation."""
    under = [("label", t) for t in ("一季度增长百分之六点五", "二季度增长百分之七点一", "消费增长百分之八", "投资增长百分之五",
                                    "出口增长百分之三")] + [("a", "数据来源")]
    assert extract(page(under)).text.split("\n")[3:] == [t for _k, t in under]
