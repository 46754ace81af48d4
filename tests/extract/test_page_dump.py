"""A short story whose page trafilatura gives back as one line (extract.linklists.dump_link_share): its baseline joins
the <article>'s text -- headline, time, share buttons, the story, tags and a list of linked, dated headlines -- with
spaces, so no line is a link's text and the body looked neither link-dense nor list-like.  The densest block decides."""
from __future__ import annotations

from extract.article import extract
from extract.linklists import dump_link_share

STORY = ("北市士林區一處民宅16日下午驚傳火警，消防局據報派出人車趕往，十分鐘後將火勢撲滅，"
         "屋內兩名長者已被鄰居協助疏散，沒有人受傷，起火原因仍待調查。")
RELATED = [("北市議員參選人競選總部明舉行成立茶會", "11:14", "2018/09/12"),
           ("比加油更方便！ 電池交換站擴大建置", "04:10", "2018/09/14"),
           ("蘆洲防災都更 可望明年重建", "04:10", "2018/09/14"),
           ("中秋節烤肉季 消防局提醒注意用火安全", "21:49", "2018/09/14"),
           ("前鎮河畔老屋 深夜冒出濃煙", "13:42", "2018/09/13"),
           ("山區道路落石 公路總局搶通", "20:58", "2018/09/15")]


def page() -> str:
    share = "".join(f"<li><a href='javascript:;'>{n}</a></li>" for n in ("Facebook", "Line", "Weibo", "Twitter", "複製連結"))
    related = "".join(f"<li><h4><a href='/news/{i}.html'>{t}</a></h4><time><span>{h}</span><span>{d}</span></time></li>"
                      for i, (t, h, d) in enumerate(RELATED))
    return ("<html lang='zh-Hant-TW'><head><meta charset='utf-8'><title>士林民宅火警 長者疏散無人傷 - 新聞網</title></head><body>"
            "<div class='nav'><a href='/'>首頁</a><a href='/society'>社會</a></div><article class='article-box'>"
            "<header><h1>士林民宅火警 長者疏散無人傷</h1><time><span>15:31</span><span>2018/09/16</span></time>"
            f"<div class='author'><a href='/reporter/1'>謝明俊</a></div><ul class='share'>{share}</ul></header>"
            "<figure><img src='a.jpg'><figcaption>民宅火警現場。</figcaption></figure>"
            f"<div class='article-body'><p>{STORY}</p><p></p></div>"
            "<div class='tags'><a href='/tag/1'>#火警</a> <a href='/tag/2'>#士林</a></div>"
            f"<section class='recommended'><h3>推薦閱讀</h3><ul>{related}</ul></section></article>"
            "<footer>新聞網 版權所有</footer></body></html>")


def test_the_story_not_the_page_run_together() -> None:
    result = extract(page())
    assert result.text == STORY
    assert result.method == "density"


def test_a_long_one_line_story_with_a_few_linked_names_is_no_dump() -> None:
    """A paragraph that names a few linked people or places is running text: its link share stays low."""
    line = ("記者謝明俊報導，" + STORY) * 3
    assert dump_link_share(line, {"謝明俊", "士林區", "消防局"}) < 0.3
    assert dump_link_share("\n".join([STORY] * 3), {t for t, _h, _d in RELATED}) == 0.0   # three lines: not a dump
