"""story_consistency: calibrated line model, fitted on StorySumm val by bench/fit_offline_storysumm.py.

Fitted on 33 val summaries, 178 lines (41 inconsistent; 168 not commentary), features coverage, dispersion, L2 1.0.
Threshold: best val line balanced accuracy flagging at most 1 x the gold count (flags 41 of 178 val lines).
Lines with an unknown name or number on val: 4 (1 inconsistent); commentary lines: 10 (8 consistent).
"""

from judgelab.backend.annotators.offline.calibration import LogisticModel

LINE_MODEL = LogisticModel(
    intercept=-1.309458,
    weights={"coverage": -0.385987, "dispersion": 0.486293},
    means={"coverage": 0.47753, "dispersion": 0.296657},
    scales={"coverage": 0.191267, "dispersion": 0.241221},
)
INCONSISTENT_THRESHOLD = 0.298440
UNKNOWN_FACT_RATE = 0.333333
COMMENTARY_CONSISTENT_RATE = 0.750000
