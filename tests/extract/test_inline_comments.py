"""Text after an HTML comment inside a paragraph (extract.dom.drop_inline_comments): portals mark keywords with
comments (谷歌<!--/keyword-->在2014年收购…) and trafilatura drops a comment together with the text after it."""
from __future__ import annotations

from lxml import etree

from extract.article import extract
from extract.dom import drop_inline_comments, load

FIRST = "TNW中文站10月14日报道，人工智能领域又有新进展，研究人员公布了一款能够依靠记忆自我学习的新型计算机。"
KEYWORD = ("<!--keyword--><span><a href='http://stock.example.com/GOOG.htm'><!--/keyword-->谷歌<!--keyword--></a></span>"
           "(<a href='http://t.example.com/google'>微博</a>)<!--/keyword-->")
SENTENCE = "在2014年收购的人工智能公司DeepMind开发出一款能够用自己的记忆学习新知识并利用这些知识来回答问题的计算机。"
REST = ["这款产品具有极其重要的意义，因为这意味着未来的人工智能技术可能不需要人类来教它就能回答人类提出的问题。",
        "DeepMind表示，这款名为DNC的模型可以接受家谱和伦敦地铁网络地图这样的信息，还可以回答与之有关的复杂问题。",
        "例如，它可以回答从邦德街开始，沿着中央线坐一站，环线坐四站，然后转朱比利线坐两站，你会到达哪个站这样的问题。",
        "DeepMind称，这款计算机还可以帮你规划从沼泽门到皮卡迪利广场的最佳路线，并说明每一段路程需要换乘的线路。",
        "同样，它还可以理解和回答某个大家族中的成员之间的关系这样的复杂问题，比如某个人的大舅究竟是谁。"]
# (a story this long goes through trafilatura's own extraction, which lost the text; a shorter one through its
# baseline, which kept it)


def page() -> str:
    """A portal story whose second paragraph opens with a keyword link wrapped in comments."""
    return ("<html><head><title>DeepMind新电脑已可利用记忆自学</title></head><body><div class='nav'><a href='/'>首页</a>"
            "</div><div id='Cnt-Main-Article-QQ'>" f"<p>{FIRST}</p><p>{KEYWORD}{SENTENCE}</p>"
            + "".join(f"<p>{p}</p>" for p in REST) + "</div><div class='footer'>Copyright 2016</div></body></html>")


def test_the_sentence_after_a_keyword_comment_is_kept() -> None:
    text = extract(page()).text
    assert SENTENCE in text.replace(" ", "")
    assert text.split("\n")[0] == FIRST and text.split("\n")[-len(REST):] == REST


def test_only_comments_inside_paragraphs_go() -> None:
    """A comment between blocks (a template's section marks) stays in the tree: it holds no text of a paragraph."""
    tree = load("<html><body><!-- main --><div><p>甲<!-- k -->乙</p></div></body></html>".encode("utf-8")).tree
    drop_inline_comments(tree)
    assert [c.text for c in tree.iter(etree.Comment)] == [" main "]
    assert tree.find(".//p").text == "甲乙"


def test_a_headline_with_its_source_above_the_first_paragraph_goes() -> None:
    html = ("<html><head><title>调研</title></head><body><div class='content'>"
            "<p>大良街道党工委委员一行到众创金融街开展调研工作 来源于：东区办事处</p>"
            + "".join(f"<p>{p}</p>" for p in [FIRST] + REST) + "</div></body></html>")
    assert extract(html).text.split("\n") == [FIRST] + REST
