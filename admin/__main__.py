"""`python -m admin`: see admin/cli.py."""
import sys

from admin.cli import main

sys.exit(main())
