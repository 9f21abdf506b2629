"""The old name of ``ctxbench.units``, kept only for cli/commands/compare.py.

compare.py is being changed on another branch; when that lands, its
``from ctxbench import fmt`` becomes ``units`` and this file goes (issue 38).
"""

from ctxbench.units import *  # noqa: F403
