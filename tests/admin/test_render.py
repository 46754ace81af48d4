"""Match data to safe HTML pieces: highlighted passages and links."""
from __future__ import annotations

from admin.render import clean_spans, highlight_parts, safe_href


def test_highlight_and_links():
    parts = highlight_parts("abcdefghij", [[2, 4], [3, 6], [8, 99], ["x", 1], [7, 7]])
    assert [(p["text"], p["mark"]) for p in parts] == [("ab", False), ("cdef", True), ("gh", False), ("ij", True)]
    assert parts[1]["next"] == 2 and parts[3]["next"] is None
    assert clean_spans([[5, 2]], 10) == []
    assert safe_href("https://a.example/x?y=1") == "https://a.example/x?y=1"
    for bad in ["javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<b>", "//a.example",
                "http:/x", "java\tscript:alert(1)", None, 5]:
        assert safe_href(bad) is None, bad
