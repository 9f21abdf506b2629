"""``python -m ctxbench`` is the ``ctxbench`` command."""

import sys

from ctxbench.cli.main import main

sys.exit(main())
