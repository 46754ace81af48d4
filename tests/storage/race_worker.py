"""A crawler stand-in for the race test: check_and_insert a list of fingerprints at a given moment."""
import json
import sys
import time

from storage import StoreConfig, open_store


def main() -> None:
    """argv: config json, input json, output json, start time (epoch seconds)."""
    cfg = StoreConfig(**json.loads(sys.argv[1]))
    items = json.load(open(sys.argv[2]))
    store = open_store(cfg)
    start = float(sys.argv[4])
    while time.time() < start:
        time.sleep(0.001)
    out = []
    for page_id, content_hash, simhash in items:
        r = store.check_and_insert(page_id, content_hash, simhash)
        out.append([page_id, r.kind, r.original_id, r.distance])
    store.close()
    json.dump(out, open(sys.argv[3], "w"))


if __name__ == "__main__":
    main()
