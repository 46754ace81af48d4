"""The windowed, cursor-paged matches list agrees with a plain sort of the whole collection."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from storage.matchlist import SORTS, MatchQuery, decode_cursor


def brute(docs, mq):
    """Reference answer: filter and sort everything in Python."""
    fld, direction = SORTS[mq.sort]
    out = [d for d in docs
           if (not mq.status or d["status"] == mq.status) and (not mq.site or d["site"] == mq.site)
           and (not mq.source or d["source_id"] == mq.source)
           and (mq.score_min is None or d["score"] >= mq.score_min)
           and (mq.score_max is None or d["score"] <= mq.score_max)
           and (mq.date_from is None or d["created"] >= mq.date_from)
           and (mq.date_to is None or d["created"] < mq.date_to + timedelta(days=1))]
    return sorted(out, key=lambda d: (d[fld], str(d["_id"])), reverse=direction < 0)


@pytest.fixture
def docs(store):
    """600 matches spread over two years (recent ones dense, old ones sparse), many ties."""
    rnd = random.Random(3)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    out = []
    for i in range(600):
        age = timedelta(hours=rnd.choice([0, 1, 2, 30, 400, 9000]) + rnd.randrange(3))
        out.append({"suspect_url": f"http://s{i % 4}.example/{i}", "site": f"s{i % 4}.example",
                    "source_id": f"w{i % 6}", "score": rnd.choice([1.0, 0.5, 0.25]) if i % 2 else rnd.random(),
                    "source_coverage": rnd.choice([0.9, 0.4]) if i % 3 else rnd.random(),
                    "status": rnd.choice(["new", "confirmed", "dismissed", "licensed"]), "created": now - age})
    store.db.matches.insert_many(out)
    store.ensure_indexes()
    for d in out:
        d["_id"] = str(d["_id"])
    return out


CASES = [dict(), dict(status="new"), dict(site="s1.example", status="confirmed"), dict(source="w3"),
         dict(score_min=0.4, score_max=0.9), dict(site="s2.example", score_min=0.5),
         dict(status="dismissed", source="w1", site="s1.example"), dict(site="nobody.example")]


def test_cursor_pages_equal_full_sort(store, docs):
    for sort in SORTS:
        for case in CASES:
            mq = MatchQuery(sort=sort, per_page=37, **case)
            want = [d["_id"] for d in brute(docs, mq)]
            got, after = [], None
            for _ in range(100):
                mq.after = after
                page, nxt = store.matches.find(mq)
                got += [str(d["_id"]) for d in page]
                if not nxt:
                    break
                after = decode_cursor(nxt, SORTS[sort][0])
            assert got == want, (sort, case)


def test_date_range_and_offset_pages(store, docs):
    now = max(d["created"] for d in docs)
    day = next(d["created"] for d in docs if timedelta(hours=300) < now - d["created"] < timedelta(hours=500)).date()
    mq = MatchQuery(date_from=datetime(day.year, day.month, day.day, tzinfo=timezone.utc),
                    date_to=datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(days=1),
                    per_page=5)
    want = [d["_id"] for d in brute(docs, mq)]
    assert want, "fixture should put matches in that range"
    got = []
    for p in range(1, 40):
        mq.page = p
        page, _ = store.matches.find(mq)
        got += [str(d["_id"]) for d in page]
    assert got == want
