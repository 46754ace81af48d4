"""The frontier journal on its own (crawler/resume.py): what a start after a kill or a full disk rebuilds
from it. Real files in a tmp dir; the crawls that use it are in test_reliability_resume/_disk."""
from __future__ import annotations

import pytest
from scrapy import Request, Spider

from crawler.journal import Journal, JobdirBusy, decode_request, encode_request, recover, write_seen


class S(Spider):
    """A spider whose callback the journal can name."""

    name = "s"

    def parse(self, response):  # noqa: D102
        return None


def fp(n: int) -> str:
    """A 20-byte fingerprint in hex."""
    return f"{n:040x}"


def test_pending_is_queued_minus_finished_and_a_torn_line_is_dropped(tmp_path):
    """`+ a`, `+ b`, `- a` and half a line: b is pending, the torn line never counts, and the journal
    is rewritten without it."""
    spider = S()
    j = Journal(tmp_path)
    j.mark("open", 0)
    for n in (1, 2):
        j.added(fp(n), encode_request(Request(f"http://h/{n}", callback=spider.parse), spider))
    j.done(fp(1))
    j.release()
    with open(tmp_path / "frontier.journal", "ab") as f:
        f.write(b"+ " + fp(3).encode() + b" AAAA")   # killed mid-write / disk full: no newline
    j = Journal(tmp_path)
    st = j.state()
    assert not st.clean and list(st.pending) == [fp(2)] and st.seen == {fp(1), fp(2)}
    pending, _ = recover(j)
    assert decode_request(pending[fp(2)], spider).url == "http://h/2"
    assert fp(3).encode() not in (tmp_path / "frontier.journal").read_bytes()
    j.release()


def test_seen_urls_are_trusted_only_up_to_the_last_start(tmp_path):
    """requests.seen entries written after the run started may belong to requests the journal never
    got (disk full): they are dropped, so those URLs are found and fetched again."""
    first = [bytes.fromhex(fp(n)) for n in (10, 11)]
    size = write_seen(tmp_path, first)
    with open(tmp_path / "requests.seen", "ab") as f:
        f.write(len(first[0]).to_bytes(2, "big") + bytes.fromhex(fp(12)))   # never journaled
    j = Journal(tmp_path)
    j.mark("open", size)
    j.added(fp(13), "x")
    j.done(fp(13))
    j.release()
    j = Journal(tmp_path)
    recover(j)
    j.release()
    from scrapy.dupefilters import _read_fingerprints

    seen = {x.hex() for x in _read_fingerprints((tmp_path / "requests.seen").read_bytes())}
    assert seen == {fp(10), fp(11), fp(13)}


def test_one_process_per_jobdir(tmp_path):
    """A second journal on a locked JOBDIR fails at once, naming the directory and the holder."""
    j = Journal(tmp_path)
    try:
        with pytest.raises(JobdirBusy, match=f"JOBDIR {tmp_path} is in use by another crawl"):
            Journal(tmp_path)
    finally:
        j.release()
    Journal(tmp_path).release()   # free again once released
