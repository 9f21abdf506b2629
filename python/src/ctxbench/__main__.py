"""``python -m ctxbench`` is the ``ctxbench`` command."""

import sys

from ctxbench.cli import main

sys.exit(main())
