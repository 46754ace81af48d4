"""Text between a container's paragraphs (extract.dom.wrap_orphan_runs): a Word-pasted page misnests
<span><p>…</p></span><font>…</font>, so a sentence sits in inline elements beside the paragraphs, and trafilatura drops
text that is not inside a paragraph once the page has enough paragraph text."""
from __future__ import annotations

from extract.article import extract
from extract.dom import load, wrap_orphan_runs

INTRO = "李金泽同志现任黑龙江省某农机有限责任公司党委书记、董事长兼总经理。"
ORPHAN = ("<font color=#0000ff><span lang=EN-US><font face='Times New Roman'>1956</font></span><span>年生人，历任农机修造厂"
          "技术科长、技术厂长、总工程师等职务，</span><span lang=EN-US><font>2001</font></span><span>年起任现职。</span></font>")
ORPHAN_TEXT = "1956年生人，历任农机修造厂技术科长、技术厂长、总工程师等职务，2001年起任现职。"
QA = ["记者：首先欢迎你来到我们的网站接受采访，既然你是农机行业的专家，想必对农业也非常熟悉了，请问你怎样看待补贴问题？",
      "李金泽：政府通过实行一增一减的农业政策来提高农民种粮的积极性，增加农民收入，增加农民补贴，让农民更加重视粮食生产。",
      "记者：这么看你平时也很关注国家的相关农业政策，所以你不止是农机专家，也可以称作是农业专家了。",
      "李金泽：应该说现在的市场经济竞争核心就是掌握信息量和掌握现代技术，作为一个企业家，如果你不能天天掌握时事经济动态，"
      "你的企业就不可能有生存的基础条件。",
      "记者：你通过什么渠道最快地获取这些信息？",
      "李金泽：通过国家下发的有关文件和上网查阅资料，另外就是深入实地调查，把这些资料综合利用起来，再用到企业的经营上。"]


def page() -> str:
    """An interview whose profile paragraph was pasted from Word: its second half outside any paragraph."""
    return ("<html><head><title>农机专家李金泽：为农机行业搭建信息平台</title></head><body><div class='nav'>"
            "<a href='/'>首页</a> <a href='/hlj/'>黑龙江</a></div><table><tr><td><div id='Content'><font color=#008080>"
            "<p><b><font color=#0000ff>个人简介：</font></b></p>"
            f"<span><p><br><font color=#0000ff>{INTRO}</font></p></span>{ORPHAN}"
            + "".join(f"<p>{p}</p>" for p in QA[:2]) + "</font>" + "".join(f"<p>{p}</p>" for p in QA[2:])
            + "</div></td></tr></table><div class='footer'>版权所有 某某网</div></body></html>")


def test_text_between_paragraphs_is_kept() -> None:
    text = extract(page()).text
    assert ORPHAN_TEXT in text.replace(" ", "")
    assert text.split("\n")[-len(QA):] == QA


def test_a_run_becomes_one_paragraph_and_blocks_stay_where_they_are() -> None:
    tree = load("<html><body><div><p>第一段的文字在这里。</p>段落之间的文字，<b>加粗的</b>也在内。<p>第二段的文字在这里。</p>"
                "<span><p>包在span里的段落。</p></span>尾</div></body></html>".encode("utf-8")).tree
    div = tree.find(".//div")
    assert [el.tag for el in div] == ["p", "p", "p", "span"]
    assert div[1].text_content() == "段落之间的文字，加粗的也在内。"
    assert div[3].tail == "尾"   # too short to be a paragraph of its own: left as it was


def test_wrapping_again_changes_nothing() -> None:
    tree = load(page().encode("utf-8")).tree
    before = [el.tag for el in tree.iter()]
    wrap_orphan_runs(tree)
    assert [el.tag for el in tree.iter()] == before


def test_a_comment_inside_a_run_stays_in_its_place() -> None:
    """A template's comment between two inline parts of the run goes into the paragraph with them: the text after it
    is not moved behind the rest of the run."""
    tree = load("<html><body><div><p>第一段的文字在这里。</p>段落之间<!-- c -->的文字，<b>加粗的</b>也在内。"
                "<p>第二段的文字在这里。</p><!-- end --> </div></body></html>".encode("utf-8")).tree
    div = tree.find(".//div")
    assert [el.tag for el in div if isinstance(el.tag, str)] == ["p", "p", "p"]
    assert div[1].text_content() == "段落之间的文字，加粗的也在内。"
