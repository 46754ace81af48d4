"""The extraction limits the crawl's settings default to, in a module that imports nothing: the crawler process
reads them without importing the extractor (its regular expressions and trafilatura), which only the worker
processes run."""

MAX_BYTES = 2_000_000       # inputs are cut here (after dropping <script>/<style>) before decoding/parsing;
                            # the largest real page in the shared data is 0.77 MB, most of it CSS
MIN_CHARS = 50              # fewer non-space characters than this: no article body
