"""A story in a table cell (extract.cells): trafilatura writes the row as one line; the cell's paragraphs come back,
so the line rules see the dateline above the story and the posting line, trackback and comment heading below it."""
from __future__ import annotations

import lxml.html

from extract.article import extract
from extract.boilerplate import cut_footer
from extract.cells import split_cells

PARAS = [f"第{i}段：播客继承了博客的原创性和大众性，有着浓郁的个性和原创精神，受到了众多网络先锋们的热烈追捧，"
         f"而且还有迅速主流化的趋势，传统媒体也开始关注这一新的传播方式。" for i in range(1, 7)]
TAIL = ["(本文发表于首页批评与建议, 已被阅读178次)", "本文通告引用(Trackback)链接: /wp-trackback.php?p=1700",
        "《播客热潮迅速蔓延》已有1件评论", "发表评论"]


def table_page(paras: list[str], tail: list[str]) -> str:
    """A blog post of the 2000s: the story and its posting lines in one cell of a layout table."""
    cell = "".join(f"<p>\u3000\u3000{p}</p>" for p in paras) + "".join(f"<div>{t}</div>" for t in tail)
    return ("<html><head><title>播客热潮迅速蔓延 挑逗传统传媒业</title></head><body><table><tr>"
            f"<td width=666>{cell}</td><td><a href='/a'>存档目录</a></td></tr></table></body></html>")


def test_a_row_line_gives_back_its_cells_paragraphs() -> None:
    tree = lxml.html.fromstring(table_page(PARAS, TAIL))
    row = "| " + " ".join(PARAS + TAIL) + " | 存档目录 |"
    assert split_cells(["标题", row], tree) == ["标题"] + PARAS + TAIL


def test_nothing_is_added_to_what_trafilatura_kept() -> None:
    tree = lxml.html.fromstring(table_page(PARAS, TAIL))
    row = "| " + " ".join(PARAS) + " |"                         # trafilatura dropped the posting lines
    assert split_cells([row], tree) == PARAS


def test_a_row_that_is_not_in_the_page_stays_as_it_is() -> None:
    tree = lxml.html.fromstring(table_page(PARAS[:1], []))
    row = "| " + " ".join(PARAS) + " |"
    assert split_cells([row], tree) == [row]


def test_the_posting_lines_under_a_story_in_a_table_cell_go() -> None:
    text = extract(table_page(PARAS, TAIL)).text
    assert text.split("\n") == PARAS


def test_a_paragraph_that_names_a_copyright_holder_is_no_footer() -> None:
    body = PARAS[:4] + ["其次，提供音频和视频内容的播客，使本来已经很麻烦的互联网版权问题更加复杂，这有可能会引发法律纠纷。"
                        "美国唱片工会表示：“播客在使用其它音乐时，一定要获得版权所有者或制作人的许可。”"]
    assert cut_footer(body) == body
    assert cut_footer(body + ["版权所有 © 2005 多维博客"]) == body


def test_posting_lines_and_sentences_that_count_readers() -> None:
    from extract.tails import is_posting_line
    assert all(is_posting_line(t) for t in TAIL[:3])
    assert not is_posting_line("这篇报道发表后已被阅读10万次，引起了社会的广泛关注。")   # a sentence of the story
