"""A blog's calendar widget, flattened by trafilatura into body lines: day rows, the weekday header, the
month pager. Never article text, wherever it lands (extract.boilerplate.clean_lines drops it)."""
from __future__ import annotations

import re

CAL_DAYS = re.compile(r"^(?:(?:[1-9]|[12]\d|3[01])\s+){2,6}(?:[1-9]|[12]\d|3[01])$")
CAL_WEEK = re.compile(r"^(?:[一二三四五六日天]\s*){7}$|^(?:(?:Su|Mo|Tu|We|Th|Fr|Sa|S|M|T|W|F)\s*){7}$", re.I)
CAL_PAGER = re.compile(r"^[«‹<]\s*\S{1,10}\s*[»›>]$")
CAL_MONTH = re.compile(r"^(?:[A-Z][a-z]{2,8}\s+\d{4}|\d{4}\s*年\s*\d{1,2}\s*月)$")
CAL_RUN = 3                  # this many calendar lines in a row make a calendar


def is_calendar_line(line: str) -> bool:
    """A row of a calendar widget: day numbers, the weekday header, the month pager or the month name."""
    line = line.strip()
    return bool(CAL_DAYS.match(line) or CAL_WEEK.match(line) or CAL_PAGER.match(line) or CAL_MONTH.match(line))


def drop_calendars(lines: list[str]) -> list[str]:
    """Runs of CAL_RUN+ calendar lines go: a blog's calendar is never article text, wherever trafilatura put it."""
    keep = [True] * len(lines)
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and is_calendar_line(lines[j]):
            j += 1
        if j - i >= CAL_RUN and any(CAL_DAYS.match(x.strip()) for x in lines[i:j]):
            keep[i:j] = [False] * (j - i)
        i = max(j, i + 1)
    return [line for line, k in zip(lines, keep) if k]
