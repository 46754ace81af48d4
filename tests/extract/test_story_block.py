"""A short story is never replaced by its footer or by a longer block about something else (issue 29).

Hand-written fixtures: a four-paragraph finance story whose page footer (advertising contact, reprint
terms, ICP licence) is longer than the story, and one whose page holds a longer unrelated block.
"""
from __future__ import annotations

from extract.article import extract
from extract.boilerplate import footer_share, is_footer

STORY = ["财经网讯 11月25日，央行开展2000亿元逆回购操作，中标利率维持不变。",
         "市场人士认为，年末流动性需求上升，央行适时投放资金，有助于稳定市场预期。",
         "数据显示，本周共有1500亿元逆回购到期，央行实现净投放500亿元。",
         "分析人士预计，年底前货币政策将保持稳健，不会大水漫灌。"]
FOOTER = ("有意与本刊合作者，请联系广告部：电话010-85655000，传真010-85655001，电子邮箱ad@example.com。"
          "刊用本网站稿件，务经书面授权。未经授权禁止转载、摘编、复制及建立镜像，违者将依法追究法律责任。"
          "《财经》杂志社版权所有，地址：北京市朝阳区东三环中路7号财富中心写字楼A座，邮编100020，联系我们，关于我们，"
          "网站地图，京ICP备05052706号，京公网安备11010502031434号，违法和不良信息举报电话010-85655099。")


def short_story_page(other: str) -> bytes:
    """A four-paragraph story and, below it, a longer block of other text."""
    return ("<html><head><title>央行开展2000亿元逆回购操作_财经网</title></head><body>"
            "<div class='nav'><a href='/'>首页</a> <a href='/m'>宏观</a> <a href='/f'>金融</a></div>"
            "<div class='article'><h1>央行开展2000亿元逆回购操作</h1><div class='time'>2019-11-25 09:30</div>"
            + "".join(f"<p>{p}</p>" for p in STORY) + "</div>"
            f"<div class='other'><p>{other}</p></div></body></html>").encode("utf-8")


def test_a_short_story_is_never_replaced_by_its_footer() -> None:
    assert is_footer(FOOTER) and not is_footer("\n".join(STORY))
    assert extract(short_story_page(FOOTER)).text.split("\n") == STORY


def test_a_longer_block_about_something_else_does_not_displace_the_story() -> None:
    """The densest block (no footer words in it) would drop the lines about the headline: they stay."""
    other = ("小站成立于二零零八年，是一家以原创内容为主的综合性网站，长期关注城市生活、文化艺术与旅游美食。"
             "我们相信好的内容能够连接人与人，也愿意与每一位读者一起记录身边的变化与感动。"
             "多年来，小站陆续推出了城市漫步、老街故事、美食地图等栏目，受到许多读者的喜爱与支持。"
             "未来我们将继续坚持原创，用心讲好每一个普通人的故事，欢迎大家常来看看。")
    assert footer_share(other) < 0.4
    text = extract(short_story_page(other)).text
    assert all(line in text.split("\n") for line in STORY)
