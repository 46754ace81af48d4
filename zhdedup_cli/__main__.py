"""`python -m zhdedup_cli`: the `zhdedup` console script without installing it."""
import sys

from zhdedup_cli import main

sys.exit(main())
