"""``python -m workers`` is the ``deltalog`` command."""

import sys

from workers.cli import main

sys.exit(main())
