"""Parameters of the offline heuristics' calibrated scores, one module per schema, written by the
``bench/fit_offline_*.py`` scripts (each prints the module it writes; do not edit by hand)."""
