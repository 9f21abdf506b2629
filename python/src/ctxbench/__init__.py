"""ctxbench: what switching really costs on this machine.

The package is the front end of the C++ engine (``ctxbench-engine``) and of
the RISC-V trap lab: it runs them, stores their JSON records in SQLite,
computes statistics, compares runs and renders reports. Data flows one way:
engine record -> store -> statistics -> tables / report.
"""

__version__ = "0.1.0"
