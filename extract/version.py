"""The version of the extraction rules, stored with every page (item field ``extract_version``).

Why: a re-crawled page whose text differs from the stored one may have changed, or the rules that cut its body
may have; the stored version tells the two apart.  Bump it whenever a change alters the text that comes out
for real pages (``benchmarks.bench_extraction --previous COMMIT`` lists the pages whose text changed).
"""
from __future__ import annotations

# zhx<issue>.<n>: issue 29's rules (article ends, footers, credits) were zhx29.1; widgets, forum threads, poems,
# sibling prose blocks and the lxml repair of lost bodies are zhx29.2; extract.tails' edge marks (page-function bars,
# bulleted and spaced-out headings, datelines, link labels, closing lines, teaser lists, other dated headlines) and
# links whose address holds parentheses are zhx29.3; the page's head (extract.pagehead: link bars and short copyright
# lines above the first paragraph, the headline over its byline, bylines with leaked markup), stories in table cells
# given back one paragraph per line (extract.cells), blog posting lines and paragraphs that name a copyright holder
# (no footer), English date stamps and » in titles are zhx29.4; a headline and its subtitle (one may ask a question) over
# the byline, trainee bylines (本报实习生) and a newspaper's dateline (2003-7-24 钱江晚报) at the body's start, a
# newsletter's sign-up prompt and a personal-opinion notice (网页内容仅为个人意见) under it are zhx29.5; a page-function
# bar above the first paragraph, a reprint's source (摘自《…》, 转自《…》), compiled-on line and pager label (页:) at
# the body's edges, an editor's credit alone on a line near the top, an image-credit line (图片说明：), signing credits
# (文：…, 执笔人：…, a name in brackets), a related link with its headline on one line (延伸阅读：…), a headline with
# its source above the body (… 来源于：…) and the text after an HTML comment inside a paragraph (extract.dom, kept)
# are zhx29.6; text between a container's paragraphs made a paragraph of its own (extract.dom.wrap_orphan_runs:
# trafilatura dropped it), a page run together on one line by trafilatura's baseline judged by the link texts inside it
# (extract.linklists.dump_link_share), the densest block's navigation runs trimmed, 重点推荐/编辑推荐/精品推荐/推荐文章
# headings, prompts to the reader (欢迎下载…APP, 请加入…粉丝团, 建议您加入…付费会员) and hashtag lines at the edges are
# zhx29.7.
EXTRACT_VERSION = "zhx29.7"
