"""A short poem is a whole work (issue 29: a poetry page scored 0.03): found on its own and beside its
translation, never dropped as too short or for the longer block next to it.

Fixtures: 李白's 静夜思 (public domain) in the layout of a classical-poetry site: the poem in one block, the
translation and notes in a sibling block, a list of other poems at the side, a licence footer.
"""
from __future__ import annotations

import pytest

from extract.article import NotArticle, extract, is_verse

POEM = ["床前明月光，疑是地上霜。", "举头望明月，低头思故乡。"]
NAV = "<div class='nav'>" + " ".join(f"<a href='/{i}'>{t}</a>" for i, t in enumerate(
    ["首页", "推荐", "诗文", "名句", "作者", "古籍", "我的"])) + "</div>"
SIDE = "<div class='right'><div>猜您喜欢</div>" + "".join(f"<p><a href='/p{i}'>{t}</a></p>" for i, t in enumerate(
    ["望庐山瀑布", "早发白帝城", "赠汪伦", "黄鹤楼送孟浩然之广陵", "送友人"])) + "</div>"
TRANSLATION = ("明亮的月光洒在床前的窗户纸上，好像地上泛起了一层霜。我禁不住抬起头来，看那天窗外空中的一轮明月，"
               "不由得低头沉思，想起远方的家乡。")
NOTES = "静夜思：安静的夜晚产生的思绪。床：今传五种说法。疑：好像。举头：抬头。"


def poem_page(after_poem: str = "", side: str = "") -> bytes:
    """The poem's block (headline, author links, the poem), optional sibling blocks and a side list."""
    return ("<html><head><title>静夜思原文、翻译及赏析_李白古诗_古诗文网</title></head><body>" + NAV
            + "<div class='main'><div class='sons'><h1>静夜思</h1><p><a href='/a'>李白</a> <a href='/d'>〔唐代〕</a></p>"
            + "<div class='contson'>" + "<br>".join(POEM) + "</div></div>" + after_poem + "</div>" + side
            + "<div class='foot'>©2024 古诗文网 | 京ICP备12345678号 | 联系我们</div></body></html>").encode("utf-8")


@pytest.mark.parametrize("side", ["", SIDE])
def test_a_short_poem_is_an_article(side: str) -> None:
    assert extract(poem_page(side=side)).text.split("\n") == POEM


def test_a_poem_beside_its_longer_translation_is_kept_with_it() -> None:
    translation = f"<div class='sons'><h2>译文及注释</h2><p>译文<br>{TRANSLATION}</p><p>注释<br>{NOTES}</p></div>"
    lines = extract(poem_page(translation, SIDE)).text.split("\n")
    assert lines[:2] == POEM and TRANSLATION in lines
    assert not {"望庐山瀑布", "赠汪伦"} & set(lines)


def test_short_lines_that_are_not_verse_are_still_too_short() -> None:
    assert is_verse("\n".join(POEM)) and not is_verse(POEM[0])
    assert not is_verse("首页，新闻，图片\n登录，注册")
    page = ("<html><body><div><p>本站正在维护中，敬请期待。</p><p>感谢您的访问。</p></div></body></html>").encode("utf-8")
    with pytest.raises(NotArticle) as err:
        extract(page)
    assert err.value.reason == "too_short"


def test_a_comment_between_the_poem_and_its_translation_does_not_separate_them() -> None:
    translation = f"<!-- 译文 --><div class='sons'><h2>译文及注释</h2><p>译文<br>{TRANSLATION}</p><p>注释<br>{NOTES}</p></div>"
    lines = extract(poem_page(translation, SIDE)).text.split("\n")
    assert lines[:2] == POEM and TRANSLATION in lines
