"""story_consistency: calibrated line model, fitted on StorySumm val by bench/fit_offline_storysumm.py.

Fitted on 33 val summaries, 178 lines (41 inconsistent; 168 about the story), features coverage_rel,
dispersion_rel, names_elsewhere, order, L2 1.0.
Summary threshold: best val summary balanced accuracy flagging at most 1 x the gold count (one line
per summary at most; in-sample: line BA 0.671, summary BA 0.710, flags 27 of 178 val lines).
Lines with an unknown name or number on val: 4 (1 inconsistent); commentary lines: 10 (8
consistent).
"""

from judgelab.backend.annotators.offline.calibration import LogisticModel

LINE_MODEL = LogisticModel(
    intercept=-1.475210,
    weights={
        "coverage_rel": -0.645358,
        "dispersion_rel": 0.54257,
        "names_elsewhere": 0.344651,
        "order": 0.261497,
    },
    means={
        "coverage_rel": 0.0,
        "dispersion_rel": 0.0,
        "names_elsewhere": 0.172619,
        "order": 0.16542,
    },
    scales={
        "coverage_rel": 0.155135,
        "dispersion_rel": 0.222841,
        "names_elsewhere": 0.377918,
        "order": 0.224479,
    },
)
SUMMARY_THRESHOLD = 0.639436
UNKNOWN_FACT_RATE = 0.333333
COMMENTARY_CONSISTENT_RATE = 0.750000
