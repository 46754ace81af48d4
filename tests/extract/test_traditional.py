"""Traditional-script pages (Taiwan, Hong Kong) through the simplified-script rules (extract.script): tails, credits
and footers written 相關新聞 / 責任編輯 / 版權所有 go as their simplified forms do, and the body comes back in the page's
own characters."""
from __future__ import annotations

from extract.article import drop_title_line, extract
from extract.boilerplate import clean_lines
from extract.script import is_traditional, restore, to_simplified

P1 = ("台中市凌晨發生一起墜樓案，一名女子酒後與男友發生口角，先吞服安眠藥後從租屋處五樓跳樓輕生，"
      "經送醫後仍宣告不治，由於家屬對於死因有意見，檢警將進行相驗釐清死因。")
P2 = ("今晨三時許，位在文心路的一棟住宅大樓突然傳出巨響，當時正在進行捷運施工交通管制的保全人員聞訊，"
      "才驚見一名女子疑似從高樓掉落，消防局救護人員趕抵現場，發現女子已無生命跡象。")


def page(tail: str, title: str = "和男友口角鎖門吞藥 女墜樓不治｜即時｜蘋果新聞網") -> bytes:
    """A Taiwan news page: the story, then its tail."""
    return (f"<html><head><title>{title}</title></head><body><div class='nav'><a href='/'>首頁</a></div>"
            f"<article><p>記者林悅／台中報導</p><p>{P1}</p><p>{P2}</p>{tail}</article></body></html>").encode("utf-8")


def test_traditional_tails_credits_and_rights_go_and_the_body_stays_traditional() -> None:
    tail = ("<p>責任編輯：王小明</p><p>本新聞文字、照片、影片專供會員閱覽，版權所有，禁止任何媒體轉貼分享，違者必究。</p>"
            "<p>相關新聞</p><p>央行開展逆回購操作</p><p>多地出台樓市新政</p><p>下載「蘋果新聞網APP」</p>")
    result = extract(page(tail))
    assert result.text.split("\n") == [P1, P2]
    assert result.editor == "王小明"


def test_a_consent_notice_ends_the_body_whatever_follows_it() -> None:
    """Language-switch prompts after the consent notice carry sentences; the notice still ends the story."""
    tail = ("<p>本網站使用相關技術提供更好的閱讀體驗，同時尊重使用者隱私，點這裡瞭解本社隱私聲明。當您關閉此視窗，代表您同意上述規範。</p>"
            "<p>Your browser does not appear to support Traditional Chinese. Would you like to go to our English website? "
            "We have the same stories there, and many more of them, every day.</p>"
            "<p>こちらのページは繁体字版です。日本語版に移動しますか。日本語のニュースもあります。毎日更新しています。</p>")
    assert extract(page(tail)).text.split("\n") == [P1, P2]


def test_the_headline_repeated_above_the_body_goes_when_the_title_adds_channel_and_site() -> None:
    assert drop_title_line(f"平鎮輪胎行惡火 疏散7人1女命喪\n{P1}", "平鎮輪胎行惡火  疏散7人1女命喪 | 社會 | 中央社 CNA") == P1
    assert drop_title_line(f"马克龙星期一在莫斯科与普京会面\n{P1}", "法国报纸摘要 - 马克龙星期一在莫斯科与普京会面") == P1
    assert drop_title_line(f"社會\n{P1}", "平鎮輪胎行惡火 | 社會 | 中央社 CNA") == f"社會\n{P1}"   # too short to be sure


def test_the_view_is_character_for_character_and_simplified_pages_pass_untouched() -> None:
    lines = ["相關新聞", P1]
    simple = [to_simplified(x) for x in lines]
    assert [len(x) for x in simple] == [len(x) for x in lines] and simple[0] == "相关新闻"
    assert restore([simple[1][2:20]], lines, simple) == [P1[2:20]]
    assert is_traditional(lines) and not is_traditional(["著名作家乾脆利落地说，" * 3])
    assert clean_lines([to_simplified(P1), "相关新闻", "央行开展逆回购操作"]) == [to_simplified(P1)]
