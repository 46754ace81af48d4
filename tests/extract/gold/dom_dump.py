"""Print a page's DOM candidates and a container's text line by line, so a person can write gold bodies.

Not an extractor: it only ranks elements by how much text their direct <p>/<br> children hold and
dumps one chosen element's text, one block per line, numbered.  The person reading the dump decides
which lines are the article.

  python tests/extract/gold/dom_dump.py PAGE.html             # list candidate containers
  python tests/extract/gold/dom_dump.py PAGE.html XPATH       # numbered lines of that container
"""
from __future__ import annotations

import re
import sys

import lxml.html

BLOCK = {"p", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "section", "article",
         "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "figure", "figcaption", "center", "td"}
SKIP = {"script", "style", "noscript", "template"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def load(path: str) -> lxml.html.HtmlElement:
    """Decode as UTF-8 when the bytes are valid UTF-8, else by the page's declaration, and parse."""
    raw = open(path, "rb").read()
    try:
        return lxml.html.document_fromstring(raw.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    m = re.search(rb"charset=[\"']?([\w-]+)", raw[:4096], re.I)
    enc = m.group(1).decode().lower() if m else "utf-8"
    if enc in ("gb2312", "gbk"):
        enc = "gb18030"
    text = raw.decode(enc, errors="replace")
    return lxml.html.document_fromstring(text)


def lines_of(el: lxml.html.HtmlElement) -> list[str]:
    """Linearise an element: one line per block-level element."""
    out: list[str] = [""]

    def walk(e: lxml.html.HtmlElement) -> None:
        tag = e.tag if isinstance(e.tag, str) else ""
        if tag in SKIP:
            if e.tail:
                out[-1] += e.tail
            return
        if tag in BLOCK:
            out.append("")
        if isinstance(e.tag, str) and e.text:
            out[-1] += e.text
        for c in e:
            walk(c)
        if tag in BLOCK:
            out.append("")
        if e.tail:
            out[-1] += e.tail

    walk(el)
    return [re.sub(r"\s+", " ", s).strip() for s in out if s.strip()]


def candidates(root: lxml.html.HtmlElement, n: int = 8) -> list[tuple[int, str, str]]:
    """Elements ranked by CJK chars in their direct children's text."""
    tree = root.getroottree()
    scored = []
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag in SKIP:
            continue
        score = len(CJK.findall(el.text or ""))
        for c in el:
            if isinstance(c.tag, str) and c.tag in ("p", "br", "span", "font", "strong", "section"):
                score += len(CJK.findall(c.text_content() if c.tag != "br" else (c.tail or "")))
        if score > 50:
            label = f"{el.tag} id={el.get('id')} class={el.get('class')}"
            scored.append((score, tree.getpath(el), label))
    return sorted(scored, reverse=True)[:n]


def main() -> None:
    root = load(sys.argv[1])
    if len(sys.argv) == 2:
        for s, xp, label in candidates(root):
            print(s, xp, label)
        return
    for el in root.xpath(sys.argv[2]):
        for i, line in enumerate(lines_of(el)):
            print(f"{i:3d} {line}")


if __name__ == "__main__":
    main()
