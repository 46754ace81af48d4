"""MemoryDedupIndex.claim_sketch reports what the plain counting loop reports, in the same order."""
import random

from fingerprint.memory_index import MemoryDedupIndex
from fingerprint.neardup import DedupDoc


def _reference_shared(postings: dict[int, list[str]], page_id: str, sketch: tuple[int, ...]) -> dict[str, int]:
    """The loop claim_sketch ran before it counted with Counter: pages sharing values, first seen first."""
    shared: dict[str, int] = {}
    for v in dict.fromkeys(sketch):
        for other in postings.get(v, []):
            if other != page_id:
                shared[other] = shared.get(other, 0) + 1
    return shared


def test_claim_sketch_equals_counting_loop():
    rng = random.Random(28)
    index = MemoryDedupIndex()
    for n in range(600):
        page = f"p{rng.randrange(400)}"   # some pages claim twice (a re-crawl): their own values are skipped
        sketch = tuple(rng.randrange(60) for _ in range(rng.randrange(0, 18)))
        postings = {v: list(ids) for v, ids in index.postings.items()}
        expected = _reference_shared(postings, page, sketch)
        min_shared = rng.choice((1, 2, 3))
        seq, others = index.claim_sketch(DedupDoc(page, f"text {n}", f"h{n}", n, sketch), min_shared)
        assert others == [(o, c, index.claims[o]) for o, c in expected.items() if c >= min_shared]
        assert seq == index.claims[page]
        assert all(page in index.postings[v] for v in sketch)
