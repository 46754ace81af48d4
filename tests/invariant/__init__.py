"""The store invariant harness (issue 31): generated multi-site corpora with an oracle of the expected
store, real crawls under random settings, crawlers and faults, and an exact comparison of the store."""
