"""likert_rubric_es: P(human median == suggested rating), fitted on BASSE es round 3
(630 summaries)
by bench/fit_offline_basse.py, add-one smoothed over the five ratings."""

# exact matches / suggestions per rating in the training split:
#   Coherence: {1: '0/6', 2: '10/22', 3: '93/120', 4: '41/97', 5: '206/385'}
#   Consistency: {1: '0/3', 2: '0/51', 3: '2/28', 4: '24/107', 5: '341/441'}
#   Fluency: {1: '23/23', 2: '0/2', 3: '0/20', 4: '3/42', 5: '515/543'}
#   Relevance: {1: '0/0', 2: '0/0', 3: '3/10', 4: '92/129', 5: '225/491'}
#   5W: {1: '4/14', 2: '9/43', 3: '30/107', 4: '90/187', 5: '111/279'}
EXACT_RATE: dict[str, dict[int, float]] = {
    "Coherence": {1: 0.090909, 2: 0.407407, 3: 0.752, 4: 0.411765, 5: 0.530769},
    "Consistency": {1: 0.125, 2: 0.017857, 3: 0.090909, 4: 0.223214, 5: 0.766816},
    "Fluency": {1: 0.857143, 2: 0.142857, 3: 0.04, 4: 0.085106, 5: 0.941606},
    "Relevance": {1: 0.2, 2: 0.2, 3: 0.266667, 4: 0.69403, 5: 0.455645},
    "5W": {1: 0.263158, 2: 0.208333, 3: 0.276786, 4: 0.473958, 5: 0.394366},
}
UNSEEN_RATE = 0.2
