"""First check that the session servers and the store fixture work."""


def test_store_roundtrip(store):
    pid = store.new_page_id()
    res = store.check_and_insert(pid, "a" * 32, 2**63 + 5)
    assert res.kind == "new"
    store.save_page({"_id": pid, "url": "http://x/1", "simhash": 2**63 + 5, "content_hash": "a" * 32, "text": "正文"})
    page = store.get_page(pid)
    assert page["simhash"] == 2**63 + 5 and page["text"] == "正文"
    res2 = store.check_and_insert(store.new_page_id(), "a" * 32, 2**63 + 5)
    assert res2.kind == "exact" and res2.original_id == pid
    res3 = store.check_and_insert(store.new_page_id(), "b" * 32, (2**63 + 5) ^ 0b111)
    assert res3.kind == "near" and res3.original_id == pid and res3.distance == 3
    res4 = store.check_and_insert(store.new_page_id(), "c" * 32, (2**63 + 5) ^ 0b1111)
    assert res4.kind == "new"
