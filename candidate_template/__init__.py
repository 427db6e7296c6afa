"""The file a candidate starts from: ``solution.py``, written out by ``grade init``."""
