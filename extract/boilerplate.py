"""Chinese boilerplate post-filter over extracted body lines (news credits, share widgets, pirate-site ads).

Why: trafilatura keeps lines that differ from site to site (原标题, 责任编辑/来源/记者 credits,
disclaimers, QR-code prompts, related-link lists, captions); left in, they make copies of one story
look different to SimHash and hide copies.  Every rule here was checked against hand-made gold bodies
(tests/extract/gold) so that it removes no article sentence:

* whole-line junk (ALWAYS): lines that are never article text wherever they appear;
* edge credits (EDGE): short credit/byline lines, removed only while they sit at the start or the end of
  the body, and only when they are short and carry no sentence punctuation -- so a body sentence that
  mentions 来源 or 编辑 stays;
* related-link blocks: a "相关新闻 / 延伸阅读 / 推荐" heading in the second half of the body cuts it;
* the article's end (cut_tail): after the body's running text, a run of date-stamped headlines, an inline
  "相关报道：· ..." list, a share or print bar, a 来源/责任编辑/原标题 line or a copyright/disclaimer
  notice starts what is not body, and it goes with everything after it (and the column labels just above
  it) -- judged by structure, so it holds on a site's first page; channel menus above the first paragraph go;
* structural edge marks (extract.tails): page-function bars, bulleted or spaced-out headings, datelines, link
  labels, app closing lines, a list of other stories (linked headlines with teasers), other dated headlines;
* widgets (extract.calendars, extract.linklists): a blog's calendar, a link list between paragraphs with its label
  (今日焦点：, or 今/日/推/荐 one character a line); forum chrome at the edges (the poster's 级别/积分 panel,
  the 楼主 post header, pagers, read counters) and a thread's reply list (回复线索, 【作者】08-11 16:58 entries);
* footers (is_footer): a candidate body made of licence, copyright, contact and reprint-terms clauses;
* credit fields (credit_fields): 原标题 / 来源 / 责任编辑 values and a rights reservation (版权归…所有,
  未经授权不得转载: evidence for a copy found elsewhere) read off the lines the filter removes;
* pirate-novel ads (NOVEL_INLINE): removed inside lines too, because pirate sites splice them into text.
"""
from __future__ import annotations

import re
from typing import Iterator

from extract.calendars import drop_calendars
from extract.pagehead import FOOTER, is_head_chrome, is_headline, trim_nav_runs  # noqa: F401 (trim_nav_runs: API)
from extract.tails import (HEAD_SYMBOLS, dateline_source, drop_headline_marks, drop_trailing_labels, is_closing_line,
                          is_dated_headline, is_dateline, is_edge_mark, is_function_bar, is_lead_in, is_link_label,
                          is_lone_editor, is_notice_head,
                          is_page_notice, is_posting_line, is_report_byline, is_software_footer, item_start, PERIOD_MAX,
                          mark_headline_links, repeated_widgets, teaser_list_starts, widget_key)

BULLET = re.compile(r"^([-*•·]\s+)+")
SENTENCE_END = re.compile(r"[。！？!?；;…”」』]$")

ALWAYS = [re.compile(p) for p in (
    r"^[（(【\[]?\s*(本文)?原标题[:：].{0,120}$",
    r"^[（(]原题为?[:：]?[《「].{0,80}[》」][)）]$",
    r"^您的浏览器(暂时)?(无法|不支持)播放.{0,20}$",
    r"网友评论仅供其?表达个人看法",
    r"^(免责声明|特别声明|版权声明)[:：]",
    r"(不代表.{0,12}(观点|立场)|版权归原作者所有|仅供参考，?不构成投资建议)",
    r"^.{0,12}(内容|言论|文章|观点)仅(为|代表|属|是)?(作者)?个人(意见|观点|看法|立场)[。.]?$",
    r"^(特别声明|声明)$",
    r"^发送邮件至.{0,60}$",
    r"^.{0,20}(扫描|扫码|长按|识别)(下方|以下|上方)?.{0,6}二维码.{0,40}$",
    r"^.{0,30}点击.{0,10}(关注|订阅).{0,20}$",
    r"^(您(所在|当前)的?|当前|所在|你的|现在)?位置[:：]",
    r"^(登录超时|免注册|快速登录|登录/注册|注册/登录)",
    r"^(消息|通知|公告\d*|登录|注册|分享|评论|更多)$",
    r"^分享(至|到).{0,12}$",
    r"^【(免责声明|特别声明|版权声明)】",
    r"^(来源于|发布日期|发布时间|浏览次数|点击数|阅读数|更新时间)[:：]\s*$",
    r"^(首页|网站首页)\s*[>›»/]",
    r"^【?字号.{0,12}$",
    r"^(图集|加载更多|查看更多|点击加载更多|展开全文|阅读全文|查看原文|阅读原文|文章导航|查看话题)$",
    r"^(上一页|上一篇).{0,30}(下一页|下一篇).{0,30}$",
    r"^\W{0,4}(本?主题|本?帖子?)已经?被?(关闭|锁定).{0,12}$",
    r"^[^。！？!?，,]{0,40}(第\s*\d+\s*页\s*/\s*共\s*\d+\s*页|上一页|第一页|首页)[^。！？!?，,]{0,30}(下一页|最末页|尾页)[^。！？!?，,]{0,10}$",
    r"^共有?(帖子|回复|主题|回帖)数?\s*\d+\s*(个|篇|条|帖)?\s*[<《]?.{0,40}$",
    r"^.{0,12}(您是本文第\s*\d+\s*个(阅览|访问|阅读)者|(阅读|浏览|点击)(次数|数|量)\s*[:：]?\s*\d+\s*次?)\s*$",
    r"^(【\d+】)+$",
    r"^▲.{0,80}$",
    r"^[\[【(（]?(图|图片|图源|配图|图片说明\d{0,2})[/:：|｜].{0,40}$",
    r"^.{0,30}(视频截图|资料图片?|图片来自网络|图片均来自网络|图片来自视频截图)[。.]?[)）]?$",
    r"^[（(]?图片来源[:：].{0,30}$",
    r"^(点击|点此)进入.{0,30}$",
    r"^返回.{0,10}首页>*$",
    r"^(分享到|分享至|收藏本文|举报|打印|关闭窗口|【打印】|【关闭】|打印本页|关闭本页)[:：]?$",
    r"^相关资讯请关注[:：].{0,30}$",
    r"^看都看完了.{0,20}$",
    r"^点击菜单栏.{0,30}$",
    r"^\d+、回复【.{1,10}】.{0,30}$",
    r"本文为.{0,20}原创(文章)?，?未经(允许|授权)不得转载",
    r"^(版权所有|Copyright|©|All rights reserved).{0,80}$",
    r"^此前报道[:：].{0,60}$",
    r"^视频[-—：:].{0,40}$",
    r"^(责任编辑|责编)[:：]\s*$",
    r"^.{0,6}打印本页.{0,12}关闭窗口.{0,6}$",
    r"^图为.{2,100}$",
    r"^.{0,80}[（(][\u4e00-\u9fff]{2,4}\s*摄[)）]$",
)]

# The same patterns as two alternations, one regex call each per line instead of one per pattern: those that open
# with ^ tried at the line's start only (.match), the others searched for (as one, every branch was tried at every
# position of a long paragraph).
ALWAYS_AT_START = re.compile("|".join(f"(?:{p.pattern})" for p in ALWAYS if p.pattern.startswith("^")))
ALWAYS_INSIDE = re.compile("|".join(f"(?:{p.pattern})" for p in ALWAYS if not p.pattern.startswith("^")))


def has_junk(text: str) -> bool:
    """Whether one of the ALWAYS patterns is found in the text."""
    return bool(ALWAYS_AT_START.match(text) or ALWAYS_INSIDE.search(text))

CREDIT_WORDS = re.compile(
    r"(责任编辑|责编|编辑|作者|记者|通讯员|采写|撰文|校对|审核|审校|监制|统筹|摄影|摄像|制作|编译|供稿|"
    r"来源|稿源|出处|原创|执笔|实习生|文/|图/|文／|文[:：]|图[:：])")
EDGE = [re.compile(p) for p in (
    r"^[（(【\[]?\s*(本文|文章)?(来源|稿源|出处|作者|编辑|责任编辑|责编|记者|通讯员|采写|撰文|校对|"
    r"审核|审校|监制|统筹|摄影|摄像|制作|编译|原创|执笔人?|文|图)\s*[:：|｜/／ ]",
    r"^[（(【\[]?\s*(本文|文章)?(来源|作者)|^[^。！？!?，,]{4,50}\s(来源于?|稿源|出自|作者)\s*[:：]\s*\S{1,20}$",
    r"^.{0,16}(记者|通讯员|作者|实习生)\s*[\u4e00-\u9fffA-Za-z·]{2,8}(\s+[\u4e00-\u9fff]{2,4})*$",
    r"(供稿|摄影[/／:：]|编辑[/／:：]|责任编辑[:：])",
    r"^来源[:：]网络$",
    r"^\d{4}[-年/.]\d{1,2}[-月/.]\d{1,2}日?\s*\d{1,2}:\d{2}(:\d{2})?(\s|$)",
)]
EDGE_ONLY = [re.compile(p) for p in (
    r"^(好文|钦佩|喜欢|泪奔|可爱|思考|感动|愤怒|难过|搞笑|震惊|同情|点赞|无聊|开心|担忧|气愤|鼓掌)$",
    r"^\d{4}[-年/.]\d{1,2}[-月/.]\d{1,2}日?\s*\d{1,2}:\d{2}(:\d{2})?$",  # a bare date may sign a letter
    r"^(地\s*址|邮政编码|邮\s*编|电子信箱|电子邮箱|电子邮件|E-?mail|联系电话|电\s*话|传\s*真)\s*[:：].{0,60}$",
    # a forum post's chrome around its text: the poster's panel, the post header, the reply bar, leaked script
    r"^(级别|积分|帖子|发帖数?|精华|注册(时间)?|经验|威望|金钱|财富|魅力|在线时间|头衔|等级|用户组|阅读权限|"
    r"我收藏的)\s*[:：].{0,20}$",
    r"^.{0,60}\d{4}-\d{1,2}-\d{1,2}\s+\d{1,2}:\d{2}(:\d{2})?\s*(楼主|沙发|板凳|地板|\d+\s*楼|#\d+)$",
    r"(document\.getElementById\(|\.value\s*=\s*[\"'][^\"']*[\"']\s*;)",
    r"^(主题|标题|帖子主题)\s*[:：].{0,60}$",
    r"^([^。！？!?，,>›»]{1,20}\s*[>›»]\s*){2,}[^。！？!?，,>›»]{1,40}$",   # a breadcrumb: 网易娱乐 > 明星俱乐部 > 明星话题
    r"^.{0,12}(欢迎你|欢迎您|您好)[！!。]?$",
)]
END_MARK = re.compile(r"(^[\[【（(]?\s*(责任编辑|责编)\s*[:：]|^.{0,40}查看更多$)")
TRAILING_HOME = re.compile(r"返回.{0,8}首页\s*>*$")
TRAILING_CREDIT = re.compile(r"(?<=[。！？!?”])\s*(责任编辑|责编|编辑|记者|来源)\s*[|｜:：/／]\s*[^。！？]{1,20}$")
EDGE_MAX_LEN = 60

RELATED_HEAD = re.compile(
    rf"^[\s【\[\\|｜{HEAD_SYMBOLS}]*(相关新闻|相关阅读|延伸阅读|推荐阅读|相关推荐|热门推荐|重点推荐|编辑推荐|精品推荐|推荐文章|猜你喜欢|相关文章|热点推荐|精彩推荐|"
    r"延伸\s*[·•・]\s*推荐|更多精彩|往期回顾|往期推荐|热门文章|大家都在看|为您推荐|今日推荐|最新文章|"
    r"相关报道|点击排行|热门排行|热点新闻|相关链接|推荐新闻|相关专题|热门资讯|最新资讯|上一篇|下一篇|"
    r"为你推荐|新闻评论|热帖|热词|回复线索|相关帖子|相关主题|我来说两句|发表评论|网友评论|请?发表您?的?看法|"
    r"(\d{1,2}小时|今日|本周|一周|本月)?(热门|热点|最新|精彩|全部|网友)?(评论|热文|热榜|排行榜?)\s*(\(\d+\)|（\d+）)?)"
    r"[\s】\]:：>]*$")

NOVEL_INLINE = [re.compile(p) for p in (
    r"[（(]?\s*手机用户请(浏览|访问|到)[^\s，。）)]{0,40}(阅读|访问)?[，,]?\s*(更优质的|更好的)?(阅读体验)?[。.]?\s*[)）]?",
    r"[（(]?\s*本章未完[，,]?\s*(请)?点击\s*(【)?下一页(】)?\s*继续(阅读)?[。.]?\s*[)）]?(>>|》》)?",
    r"上一章\s*[|｜←]?\s*(返回)?\s*(目录|书页)\s*[|｜]?\s*(加入书签\s*[|｜]?\s*)?下一章\s*→?",
    r"上一页\s*[|｜←]?\s*(返回)?\s*(目录|书页)\s*[|｜]?\s*下一页\s*→?",
    r"(天才)?一秒记住[^，。\n]{0,40}[，,]?\s*(为您提供)?[^。\n]{0,30}(阅读|地址|网址)[。！!]?",
    r"(请记住本书首发域名|本书首发来自|最新章节请到|最快更新)[^。\n]{0,40}[。！!]?",
    r"(投推荐票|加入书签|章节错误，?点此举报|章节报错)",
)]

# Every NOVEL_INLINE pattern needs one of these words: a line without any is left as it is (one scan, not 7).
NOVEL_WORDS = re.compile("手机用户请|本章未完|上一章|上一页|一秒记住|请记住本书首发域名|本书首发来自|最新章节请到|最快更新|"
                         "投推荐票|加入书签|章节错误|章节报错")


LEAKED_ATTR = re.compile(r'\s*\b[a-z][a-z-]{0,15}="[^"<>\n]{0,40}"\s*')   # size="20" left as text by broken markup


def is_edge_credit(line: str) -> bool:
    """A short credit/byline line (only removed at the body's edges); attributes that broken markup left in its text
    (作者： size="20" 来源： size="20" 发布日期：…) are not counted."""
    if '="' in line:
        line = LEAKED_ATTR.sub(" ", line)
    if len(line) > EDGE_MAX_LEN or not CREDIT_WORDS.search(line):
        return False
    if SENTENCE_END.search(line) and not line.endswith(("）", ")")):
        return False
    return any(p.search(line) for p in EDGE)


def is_edge_junk(line: str) -> bool:
    """Reaction buttons, a bare date, contact lines: junk at the body's edges, possible words inside it."""
    return any(p.search(line) for p in EDGE_ONLY)


def cut_at_end_mark(lines: list[str]) -> list[str]:
    """Cut at a 责任编辑 line or a '查看更多' link line in the last 40%: what follows is widgets and related news."""
    start = max(1, (len(lines) * 3) // 5)   # above it, a lone editor's credit is dropped, not cut at
    for i in range(start, len(lines)):
        if END_MARK.search(lines[i]) and len(lines[i]) <= EDGE_MAX_LEN:
            return [line for line in lines[:start] if not is_lone_editor(line)] + lines[start:i]
    return [line for line in lines[:start] if not is_lone_editor(line)] + lines[start:]


JUNK_LINE_MAX = 200   # a longer line is a paragraph: one disclaimer sentence in it does not make it junk
SENTENCE = re.compile(r"[^。！？!?]*(?:[。！？!?]+[”’」』）)]*|$)")


def is_junk(line: str) -> bool:
    """A line that is never article text (a paragraph loses only its junk sentences: drop_junk_sentences)."""
    return len(line) <= JUNK_LINE_MAX and (has_junk(line) or bool(RELATED_ITEM.match(line)))


def drop_junk_sentences(line: str) -> str:
    """A long paragraph without the sentences that are never article text (a reprint disclaimer pasted in)."""
    if len(line) <= JUNK_LINE_MAX or not has_junk(line):
        return line
    return "".join(s for s in SENTENCE.findall(line) if not has_junk(s)).strip()


def strip_novel_ads(line: str) -> str:
    """Remove pirate-site ads spliced into a line of chapter text."""
    if not NOVEL_WORDS.search(line):
        return line.strip()
    for p in NOVEL_INLINE:
        line = p.sub("", line)
    return line.strip()


def cut_related(lines: list[str]) -> list[str]:
    """Drop a trailing related-links block: a heading in the second half, or one followed by short lines."""
    for i in range(1, len(lines)):
        if RELATED_HEAD.match(lines[i]):
            rest = lines[i + 1:]
            short = sum(1 for line in rest if len(line) <= 40)
            if i >= len(lines) // 2 or (rest and short / len(rest) >= 0.6):
                return lines[:i]
    return lines




def cut_footer(lines: list[str]) -> list[str]:
    """Cut the site footer (ICP licence, 举报 hotline, copyright) when it appears in the last third; a paragraph
    that names a copyright holder (须获得版权所有者的许可。) is no footer unless footer clauses make it up."""
    for i in range(max(1, (len(lines) * 2) // 3), len(lines)):
        line = lines[i]
        if FOOTER.search(line) and len(re.sub(r"\s+", "", line)) <= 300 and (not running_chars(line) or is_footer(line)):
            return lines[:i]
    return lines


# A headline of a recommendation list: a numeric date (and time) on a line of its own, at the end of a short
# line ("2018-03-02 08:58:39", "（2005-04-03 17:19PM）", "(04-19)") or in brackets at its start ("[2005-08-21]");
# not "2013年3月30日": tables and chronologies in a body write dates that way.
STAMP = re.compile(
    r"^\d{1,2}:\d{2}(:\d{2})?$"
    r"|^[\[【(（]?\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(\s*\d{1,2}:\d{2}(:\d{2})?)?[\]】)）]?$"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(\s*\d{1,2}:\d{2}(:\d{2})?\s*([AP]M)?)?[\]】)）]?$"
    r"|[(（]\d{1,2}[-/]\d{1,2}[)）]$"
    r"|^[\[【(（]\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[\]】)）]")
STAMP_LINE_MAX = 60          # a dated line longer than this is a paragraph that ends with a date
STAMP_RUN = 3                # this many dated lines ...
STAMP_WINDOW = 8             # ... among this many lines make a headline list
# One headline of a numbered column list: "1、央行开展逆回购操作" (short, no punctuation inside).
NUMBERED_HEADLINE = re.compile(r"^\d{1,2}\s*[、.．]\s*[^，。；：,;:！？!?]{4,36}$")
TAIL_WORDS = (r"相关新闻|相关阅读|相关报道|相关链接|相关文章|延伸阅读|推荐阅读|为你推荐|为您推荐|猜你喜欢|热点推荐|"
              r"热门推荐|今日推荐|精彩推荐|其他报道|更多报道|图片精选|新闻评论|热帖|热词|热门文章|往期回顾")
# A related heading with its list on the same line: "相关报道： · 标题（2005-04-03）· 标题".
RELATED_INLINE = re.compile(rf"^[\s【\[]*({TAIL_WORDS})[\s】\]:：]*.{{0,30}}[·•]")
# ... or with one headline: "延伸阅读：广西骗子演绎惊天骗局", "推荐阅读 十大经理人" (a link, never the story's text: the
# line goes, wherever it is; the story may go on under it).
RELATED_ITEM = re.compile(rf"^[\s【\[]*({TAIL_WORDS})\s*([】\]:：]|\s)\s*[^。！？!?，,]{{4,40}}$")
# Lines that close an article: a share bar, a disclaimer, a copyright / anti-piracy notice, a newsroom notice.
TAIL_MARK = re.compile(
    r"^(分享(到|至)?[:：]|[【\[]?(反侵权公告|版权与免责声明|版权声明|免责声明|著作权声明|特别声明)|"
    r".{0,12}版权与免责声明|原创版权禁止|声明[:：].{0,80}不构成投资建议|"
    r"[【\[(（]?\s*(责任编辑|责编)\s*[:：]|[（(]?原标题[:：]|(来源|稿源)[:：]\s*[^\s\d，。]{1,20}$|"
    r"[【\[]?\s*(打印本文|打印本页|打印此文|关闭窗口|发送给朋友|返回页首|返回顶部))")
LABEL_MAX = 16               # a column label above a tail (重点推荐, 证券要闻) is at most this long


DIGIT = re.compile(r"\d")


def is_stamp(line: str) -> bool:
    """A date-stamped headline line (or a bare date or time) of a recommendation list (every date of STAMP and
    DATED_HEADLINE has a digit but 刚刚: a line without one is skipped before the two patterns)."""
    return len(line) <= STAMP_LINE_MAX and ("刚刚" in line or bool(DIGIT.search(line))) \
        and bool(STAMP.search(line) or is_dated_headline(line))


# A forum thread's reply list: "标题【作者】08-11 16:58 138字 [140/0]" (several may share one line).
FORUM_STAMP = re.compile(r"【[^【】]{1,20}】\s*\d{1,2}-\d{1,2}\s+\d{1,2}:\d{2}")


def running_chars(line: str) -> int:
    """A paragraph's characters (20+ characters with sentence punctuation), 0 for headlines, labels and the
    entries of a reply list."""
    if len(line) < 20 or not re.search(r"[。！？!?…]", line) or FORUM_STAMP.search(line):
        return 0
    return len(line)


def tail_starts(lines: list[str]) -> Iterator[int]:
    """Where a non-body tail may begin: a list of linked teasers, then line_tail_starts."""
    yield from teaser_list_starts(lines)
    yield from line_tail_starts(lines)


def line_tail_starts(lines: list[str]) -> Iterator[int]:
    """Where a non-body tail may begin, found top-down: a dated headline run, a labelled numbered headline list, an
    inline related list, a closing line or the first of a widget repeated under every post.  A start found at line i
    is never above i - PERIOD_MAX (item_start: a dated list's first headline), so after a start s the later ones are
    all at s - PERIOD_MAX or below it (cut_tail stops there)."""
    widgets = repeated_widgets(lines)
    i = 1
    while i < len(lines):
        line = lines[i]
        if TAIL_MARK.search(line) or RELATED_INLINE.search(line) or RELATED_HEAD.match(line) \
                or is_function_bar(line) or is_notice_head(line) or is_software_footer(line) or is_closing_line(line) \
                or is_posting_line(line):
            yield i
        elif widgets and widget_key(line) in widgets:
            widgets.discard(widget_key(line))
            yield i   # only where it first appears: under the first post (a refrain further down is not a tail)
        elif is_label(lines[i - 1]) and all(NUMBERED_HEADLINE.match(x) for x in lines[i:i + STAMP_RUN]) \
                and len(lines) >= i + STAMP_RUN:
            yield i - 1   # a column's numbered headlines under its name (时报观察 / 1、... 2、... 3、...)
        elif is_stamp(line) and sum(map(is_stamp, lines[i:i + STAMP_WINDOW])) >= STAMP_RUN:
            start = item_start(lines, i, is_stamp)
            yield start if start is not None else i - 1 if i > 1 and headline_above(lines, i) else i
            while i + 1 < len(lines) and (is_stamp(lines[i + 1]) or not running_chars(lines[i + 1])):
                i += 1   # the rest of this run
        i += 1


def headline_above(lines: list[str], i: int) -> bool:
    """Whether a run starting with a bare date or time at i has its first headline on the line above."""
    bare = not re.search(r"[^\d\s:/.\-\[\]【】()（）]", lines[i])
    above = lines[i - 1]
    return bare and len(above) <= STAMP_LINE_MAX and not SENTENCE_END.search(above) and not is_stamp(above)


def cut_tail(lines: list[str]) -> list[str]:
    """Cut the article where its tail begins: the first start with more running text before it than after."""
    before = [0]
    for line in lines:
        before.append(before[-1] + running_chars(line))

    def ends(at: int) -> bool:
        return before[at] >= max(1, before[-1] - before[at]) or bool(before[at] and is_page_notice(lines[at]))

    best = next((at for at in sorted(set(teaser_list_starts(lines))) if ends(at)), None)
    for at in line_tail_starts(lines):   # the lines below a tail are not read (a long page's references, navboxes)
        if best is not None and at - PERIOD_MAX > best:
            break
        if (best is None or at < best) and ends(at):
            best = at
    return lines if best is None else lines[:tail_labels(lines, best)]


TAIL_LABELS = 6              # at most this many column labels above a tail belong to it


def tail_labels(lines: list[str], at: int) -> int:
    """Where the tail really begins: column labels right above it (重点推荐, 证券要闻: short, no sentence, no
    digits) belong to it; a signing date or a credit line does not."""
    j = at
    while j > 1 and at - j < TAIL_LABELS and is_label(lines[j - 1]):
        j -= 1
    return j


def is_label(line: str) -> bool:
    """A column or widget label: a few characters, no sentence punctuation, no digits."""
    return 0 < len(line) <= LABEL_MAX and not re.search(r"[。！？!?…，,；;\d]", line)


# Clauses of a site footer: licences, copyright, contact and advertising lines, reprint terms, site links.
FOOTER_CLAUSE = re.compile(
    r"(ICP备|ICP证|公网安备|许可证|版权所有|All Rights Reserved|Copyright|©|违法和不良信息|举报|联系我们|关于我们|"
    r"网站地图|广告|合作|电话|传真|邮箱|E-?mail|地址|邮编|授权|转载|镜像|法律责任|不代表.{0,10}观点|隐私|免责)", re.I)
CLAUSE_SPLIT = re.compile(r"[，。；;,！!？?\n|｜]+")
FOOTER_SHARE = 0.4           # a candidate body with this share of footer clauses is a footer, not a story


def footer_share(text: str) -> float:
    """Share of the text's characters in footer clauses (licence, copyright, contact, reprint terms)."""
    clauses = [c for c in (re.sub(r"\s+", "", c) for c in CLAUSE_SPLIT.split(text)) if c]
    total = sum(map(len, clauses))
    return sum(len(c) for c in clauses if FOOTER_CLAUSE.search(c)) / total if total else 0.0


def is_footer(text: str) -> bool:
    """A block made of copyright, ICP licence, contact and navigation lines: never an article body."""
    return footer_share(text) >= FOOTER_SHARE


# Credit lines that carry data: the story's original headline, its source outlet, its responsible editor, the
# rights reservation.
CREDITS = (
    ("original_title", re.compile(r"^[（(【\[]?\s*(?:本文)?原标题[:：]\s*[《「]?(.{2,120}?)[》」]?\s*[)）】\]]?$")),
    ("source", re.compile(r"^[（(【\[]?\s*(?:文章|本文|新闻)?(?:来源|稿源)\s*[:：]\s*([^\s，。；;:：|｜)）】\]]{2,30})")),
    ("editor", re.compile(r"(?:责任编辑|责编)\s*[:：]\s*([\u4e00-\u9fff·]{2,6}|[A-Za-z][A-Za-z .]{1,30}[A-Za-z])")),
    # a rights reservation (who holds the rights, the reprint terms): evidence for a copy found elsewhere
    ("rights", re.compile(r"^[【\[（(]?\s*((?:(?:版权|转载|郑重|特别)声明\s*[:：】\]]?\s*)?"
                          r"[^【\[]{0,40}(?:版权归.{1,20}所有|版权所有|(?:未经|没有).{0,12}(?:授权|许可|同意).{0,12}"
                          r"(?:不得|禁止|严禁|谢绝)(?:任何)?.{0,6}(?:转载|使用|复制)|(?:原创|独家)(?:文章|稿件|作品)?，?(?:转载|引用)"
                          r"请?(?:注明|联系)).{0,60}?)[】\])）]?$")),
)
CREDIT_LINE_MAX = 80         # a longer line is a paragraph, not a credit
RIGHTS = dict(CREDITS)["rights"]


def is_rights_line(line: str) -> bool:
    """A rights reservation on a line of its own (its text goes to the ``rights`` field)."""
    return len(line) <= CREDIT_LINE_MAX and bool(RIGHTS.match(line.strip()))


# A forum reply's line about the post it answers: 原标题:【TITLE】是大卫在2005年8月12日16:10:13发表 -- who posted it and
# when is no part of a headline.
POSTED = re.compile(r"(?:\s*(?:是|由)\s*|\s+)[^\s，。【】\[\]“”]{1,20}?\s*(?:在|于)\s*\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?"
                    r"\s*\d{1,2}:\d{2}(?::\d{2})?\s*(?:发表|发布|发帖|发贴|回复)?\s*$")
BRACKETED = re.compile(r"^[【\[]([^【】\[\]]+)[】\]]$")


def headline_of(value: str) -> str:
    """An original-title value without a forum's poster clause behind it and the brackets around what is left."""
    value = POSTED.sub("", value.strip()).strip()
    m = BRACKETED.match(value)
    return m.group(1).strip() if m else value


def credit_fields(lines: list[str]) -> dict[str, str]:
    """原标题 / 来源 / 责任编辑 values from the credit lines around a body, so they move into fields when the
    boilerplate filter takes the lines out of the text (the first value of each kind)."""
    out: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or len(line) > CREDIT_LINE_MAX:
            continue
        for name, pattern in CREDITS:
            m = pattern.search(line)
            if m and name not in out:
                out[name] = m.group(1).strip() if name != "original_title" else headline_of(m.group(1))
        if "source" not in out and dateline_source(line):   # SITE 2005年3月11日12:12 来源：[ 人民网 ]
            out["source"] = dateline_source(line)
    return out


def drop_leading_menus(lines: list[str], anchors: set[str] | frozenset = frozenset()) -> list[str]:
    """Channel menus, link bars and copyright lines above the body's first paragraph go (a list of names inside
    the body stays)."""
    first = next((i for i, line in enumerate(lines) if running_chars(line)), len(lines))
    return [line for i, line in enumerate(lines) if i >= first or not is_head_chrome(line, anchors)]


HEAD_TITLES = 2              # a headline and its subtitle may stand above the byline at the body's start


def is_title_line(line: str) -> bool:
    """A headline, or one that asks a question (谁来为无序拆房“埋单”？): no sentence inside it."""
    return is_headline(line) or is_headline(line.rstrip().rstrip("？?"))


def strip_edges(lines: list[str], head: int = 4, tail: int = 10) -> list[str]:
    """Remove credit lines while they are at the start (up to head) or the end (up to tail)."""
    def edge(line: str) -> bool:
        return is_edge_credit(line) or is_junk(line) or is_edge_junk(line) or is_rights_line(line) or is_dateline(line) \
            or is_link_label(line) or is_report_byline(line) or is_edge_mark(line)

    i = next((k for k in range(1, HEAD_TITLES + 1) if len(lines) > k + 1 and all(map(is_title_line, lines[:k]))
              and edge(lines[k])), 0)   # the headline (and its subtitle) over its byline
    limit = head + max(0, i - 1)   # a subtitle does not use up a byline's place
    while i < min(limit, len(lines)) and edge(lines[i]):
        i += 1
    lines = lines[i:]
    j = len(lines)
    while j > 0 and len(lines) - j < tail and (edge(lines[j - 1]) or (j > 1 and is_lead_in(lines[j - 1]))):
        j -= 1
    lines = lines[:j]
    if lines:
        lines[-1] = TRAILING_HOME.sub("", TRAILING_CREDIT.sub("", lines[-1])).rstrip()
    return [line for line in lines if line]


CITATION = re.compile(r"^\[\d+(-\d+)?\]$")
PUNCT_ONLY = re.compile(r"^[。，、；：！？,.;:!?）)」』”]+$")


def rejoin(lines: list[str]) -> list[str]:
    """Drop citation markers ([13]) and glue punctuation split off onto its own line back on."""
    out: list[str] = []
    for line in lines:
        if CITATION.match(line):
            continue
        if out and PUNCT_ONLY.match(line):
            out[-1] += line
        else:
            out.append(line)
    return out


def clean_lines(lines: list[str], anchors: set[str] | frozenset = frozenset()) -> list[str]:
    """The full post-filter: inline novel ads, the article's tail, whole-line junk, related blocks, edge credits
    (`anchors`: the page's link texts, which show a list of other stories under the body)."""
    out = [strip_novel_ads(BULLET.sub("", line.strip())) for line in lines]
    out = cut_tail(drop_calendars(mark_headline_links(out, anchors)))
    out = drop_trailing_labels(drop_headline_marks(out), is_junk)
    out = rejoin([kept for kept in (drop_junk_sentences(line) for line in out if line and not is_junk(line)) if kept])
    out = drop_leading_menus(cut_related(cut_footer(out)), anchors)
    return strip_edges(cut_at_end_mark(out))


def clean_text(text: str) -> str:
    """clean_lines over a newline-separated body."""
    return "\n".join(clean_lines(text.split("\n")))
