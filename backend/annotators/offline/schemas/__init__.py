"""One module per built-in schema; each registers its heuristic with ``heuristics.OFFLINE``."""
