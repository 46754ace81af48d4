"""Issue 27: pages stored by another fingerprint version (before synonym canonicalisation) are fingerprinted
again from their text when the store opens, and the rebuilt index finds copies by the new fingerprints."""
from __future__ import annotations

from fingerprint.neardup import DedupDoc
from fingerprint.synonyms import synonyms_enabled
from fingerprint.version import BASE_VERSION, FINGERPRINT_VERSION
from storage.fpversion import page_fields


def _spun(text: str) -> str:
    """The same story with words swapped for cilin synonyms (what a spinner does)."""
    for a, b in (("消息", "讯息"), ("已经", "业已"), ("表示", "示意"), ("发现", "察觉"), ("重要", "紧要")):
        text = text.replace(a, b)
    return text


def test_pages_of_the_old_version_are_refingerprinted_on_open(store, store_config, news):
    from storage import open_store

    text = next(n["text"] for n in news if "表示" in n["text"] and "已经" in n["text"] and len(n["text"]) > 600)
    with synonyms_enabled(False):
        old = page_fields(text)
    assert old["fp_version"] == BASE_VERSION
    pid = store.new_page_id()
    store.save_page({"_id": pid, "url": "http://t/old", "text": text, **old})
    untouched = store.new_page_id()   # no fp_version: not written by a crawl, left alone
    store.save_page({"_id": untouched, "url": "http://t/hand", "text": text, "simhash": 5, "content_hash": "%032x" % 5})
    with synonyms_enabled(True), open_store(store_config) as st:
        page = st.pages.find_one({"_id": st.pages.find_one({"url": "http://t/old"})["_id"]})
        new = page_fields(text)
        assert new["fp_version"] == FINGERPRINT_VERSION != BASE_VERSION
        assert (page["fp_version"], page["simhash"], page["sketch"]) == (new["fp_version"], new["simhash"], new["sketch"])
        assert new["simhash"] != old["simhash"]
        assert st.pages.find_one({"url": "http://t/hand"})["simhash"] == 5
        copy = DedupDoc.of(st.new_page_id(), _spun(text))
        hit = st.lookup(copy.content_hash, copy.simhash)   # the rebuilt index holds the new SimHash
        assert hit.kind == "near" and hit.original_id == pid, hit


def test_the_outdated_filters_find_every_other_version_and_only_those(store):
    """Two ranges of the fp_version index (a `$ne` made SecantusDB read every page at each store open): every
    other version, whether it sorts before or after this one, a version this one is a prefix of too; never
    this version, a page without one, or a version that is no string."""
    from storage.fpversion import current_version, outdated

    version = current_version()
    other = BASE_VERSION if version != BASE_VERSION else FINGERPRINT_VERSION
    coll = store.db.fp_version_probe
    coll.drop()
    coll.insert_many([{"_id": 1, "fp_version": version}, {"_id": 2, "fp_version": other},
                      {"_id": 3, "fp_version": version + "+later"}, {"_id": 4, "fp_version": "a"},
                      {"_id": 5, "fp_version": "\uffff"}, {"_id": 6}, {"_id": 7, "fp_version": None},
                      {"_id": 8, "fp_version": 3}])
    found = [d["_id"] for old in outdated(version) for d in coll.find(old, {"_id": 1})]
    assert sorted(found) == [2, 3, 4, 5] and len(found) == len(set(found))
    coll.drop()
