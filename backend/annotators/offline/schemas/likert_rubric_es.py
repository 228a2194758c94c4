"""likert_rubric_es (Spanish news summaries, 1-5 on five criteria): the cues the guidelines name
(bullets, connectors, chatbot phrases, subjective valuations, invented facts, kept key facts).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.offline.calibration import answer_score, prediction_score
from judgelab.backend.annotators.offline.fitted import likert_rubric_es as fitted
from judgelab.backend.annotators.offline.heuristics import OFFLINE
from judgelab.backend.annotators.offline.text import (
    MAX_TARGET_CHARS,
    clamp,
    phrase_regex,
    read_text,
    tokens_in,
)
from judgelab.backend.draft import Draft
from judgelab.configs.schema import get_schema

_BULLET_RE = re.compile(r"^\s*(?:[-*•·–—]|\d{1,2}[.)])\s+")
#: Mean words per bullet: up to 3 = loose words (Coherence 1), up to 7 = fragments (2),
#: longer = developed points (3).
BULLET_LOOSE_WORDS = 3
BULLET_FRAGMENT_WORDS = 7
_ES_CONNECTORS = phrase_regex(
    [
        g.fold(p)
        for p in (
            "además",
            "sin embargo",
            "por otro lado",
            "por otra parte",
            "mientras",
            "tras",
            "después",
            "por ello",
            "por eso",
            "por lo tanto",
            "por tanto",
            "asimismo",
            "no obstante",
            "aunque",
            "porque",
            "ya que",
            "debido a",
            "finalmente",
            "por último",
            "en cambio",
            "luego",
            "entonces",
            "posteriormente",
            "a pesar de",
            "dado que",
            "de hecho",
            "por su parte",
            "antes de",
            "en primer lugar",
            "a su vez",
            "es decir",
            "de este modo",
            "de esta manera",
            "por consiguiente",
            "al mismo tiempo",
            "en este sentido",
            "sino",
            "incluso",
            "también",
            "así como",
            "con el objetivo de",
            "para ello",
            "mientras tanto",
            "gracias a",
            "por lo que",
            "de modo que",
            "de forma que",
            "en cuanto a",
            "a raíz de",
            "con todo",
        )
    ]
)
_ES_CHATBOT = phrase_regex(
    [
        g.fold(p)
        for p in (
            "te gustaría que",
            "le gustaría que",
            "quieres que",
            "quiere que",
            "desea que",
            "deseas que",
            "espero que",
            "si necesitas",
            "si necesita",
            "no dudes en",
            "no dude en",
            "puedo ayudarte",
            "puedo ayudar",
            "aquí tienes",
            "aquí tiene",
            "aquí está el resumen",
            "hay algo más",
            "como modelo de lenguaje",
            "como asistente",
            "este resumen",
            "el resumen anterior",
            "¿necesitas",
            "claro, aquí",
            "por supuesto, aquí",
            "te presento",
            "le presento",
            "resumen del texto",
            "resumen del artículo",
            "resumen de la noticia",
            "here's",
            "here is",
        )
    ]
)
_ES_SUBJECTIVE = [
    g.fold(p)
    for p in (
        "preocupante",
        "lamentable",
        "lamentablemente",
        "impresionante",
        "es importante destacar",
        "cabe destacar",
        "sin duda",
        "es fundamental",
        "es crucial",
        "es esencial",
        "alarmante",
        "increíble",
        "admirable",
        "vergonzoso",
        "sorprendente",
        "desafortunadamente",
        "afortunadamente",
        "fascinante",
        "inspirador",
        "conmovedor",
        "indignante",
        "escandaloso",
        "loable",
        "encomiable",
        "es evidente que",
        "no cabe duda",
    )
]
_EN_ONLY_WORDS = (g.STOPWORDS_EN - g.STOPWORDS_ES - g.STOPWORDS_IT) - {
    "s",
    "t",
    "d",
    "m",
    "re",
    "ve",
    "ll",
    "me",
    "no",
    "a",
    "he",
    "son",
    "once",
    "most",
}
_ES_MONTHS = frozenset(
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()
)
_ES_PREPOSITIONS = frozenset(
    "a de en con por para sobre entre sin desde hasta tras hacia contra ante bajo según segun".split()
)
_ES_INVARIABLE_AFTER_ARTICLE = frozenset(
    "casi apenas menos tan solo sólo aun aún todavía cuales cuantas cuantos demas".split()
)
_ES_NOT_PARTICIPLES = frozenset(
    """lado grado sentido partido pedido cuidado periodo medido mercado estado resultado
    pasado contenido ruido vestido marido sonido apellido abogado soldado senado jurado""".split()
)
#: Summary nearly the article: longer than this share of it, or this share of its word
#: trigrams copied from the article (with at least half the length).
COPY_LENGTH_RATIO = 0.8
COPY_TRIGRAM_SHARE = 0.8
LONG_SUMMARY_RATIO = 0.5
#: Consistency: a sentence with this many content words and a smaller share of them in the
#: article counts as one invented statement (when it has no unknown number or name).
UNSUPPORTED_SENTENCE_MIN_WORDS = 4
UNSUPPORTED_SENTENCE_GROUNDING = 0.34
#: 5W: at most this many key entities and numbers of the article are checked.
KEY_ENTITIES = 5
KEY_NUMBERS = 2


SCHEMA = "likert_rubric_es"


@OFFLINE.register(SCHEMA, reads=("title", "article", "summary"))
def annotate_likert_rubric_es(data: dict) -> Draft:
    article = read_text(data, "article")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    if not summary.strip():
        return Draft(info={"empty_summary": True})
    index = g.shared_index((article, read_text(data, "title")), lang="es")
    schema = get_schema(SCHEMA)
    copy = is_near_copy(article, summary)
    coherence, coherence_info = coherence_score(summary)
    consistency, unsupported = consistency_score(summary, index)
    fluency, fluency_issues = fluency_score(summary)
    relevance, relevance_issues = relevance_score(article, summary, copy)
    five_w, key_info = five_w_score(article, summary, copy)
    criterion = schema.constant("criteria")
    ratings = {
        criterion["coherence"]: coherence,
        criterion["consistency"]: consistency,
        criterion["fluency"]: fluency,
        criterion["relevance"]: relevance,
        criterion["five_w"]: five_w,
    }
    draft = Draft(
        info={
            "coherence": coherence_info,
            "unsupported": unsupported,
            "fluency_issues": fluency_issues,
            "relevance_issues": relevance_issues,
            "five_w": key_info,
            "near_copy": copy,
        },
    )
    for criterion, value in ratings.items():
        control = schema.item_control(criterion)
        draft.choices[control] = [str(value)]
        draft.scores[control] = answer_score(rating_probability(criterion, value))
    draft.score = prediction_score(draft)
    return draft


def rating_probability(criterion: str, rating: int) -> float:
    """P(human median == ``rating``) for the heuristic's ``rating`` of ``criterion``, fitted on BASSE."""
    return fitted.EXACT_RATE.get(criterion, {}).get(rating, fitted.UNSEEN_RATE)


def coherence_score(summary: str) -> tuple[int, dict[str, object]]:
    """Bullet lists score 1-3 by how developed the points are; prose 5 with connectors
    (explicit coherence), 4 without (implicit); a single sentence is not penalised (5)."""
    lines = [summary[a:b] for a, b in g.split_lines(summary)]
    bullets = [_BULLET_RE.sub("", line) for line in lines if _BULLET_RE.match(line)]
    connectors = sorted({m.group().lower() for m in _ES_CONNECTORS.finditer(g.fold(summary))})
    info: dict[str, object] = {"bullets": len(bullets), "connectors": connectors}
    if len(bullets) >= 2:
        mean_words = sum(len(g.tokenize(b)) for b in bullets) / len(bullets)
        info["mean_bullet_words"] = round(mean_words, 1)
        if mean_words <= BULLET_LOOSE_WORDS:
            return 1, info
        return (2 if mean_words <= BULLET_FRAGMENT_WORDS else 3), info
    sentences = g.split_sentences(summary)
    info["sentences"] = len(sentences)
    return (5 if len(sentences) <= 1 or connectors else 4), info


def consistency_score(summary: str, index: g.SourceIndex) -> tuple[int, list[str]]:
    """5 minus one per unsupported fact (number, name, or sentence with few known words);
    1 when almost nothing of the summary is in the article."""
    unsupported: list[str] = []
    grounded_words = total_words = 0
    tokens = g.tokenize(summary)
    for start, end in g.split_sentences(summary):
        sentence = summary[start:end]
        if _ES_CHATBOT.search(g.fold(sentence)):
            continue
        facts = [
            f"number {n.text}"
            for n in g.extract_numbers(sentence, "es")
            if not index.has_number(n) and not g.is_list_marker(sentence, n)
        ]
        names = (g.without_initial_word(sentence, e) for e in g.extract_entities(sentence, g.STOPWORDS_ES))
        facts += [f"name {e.text}" for e in names if e is not None and not _partly_known(e, index)]
        content = [t for t in tokens_in(tokens, start, end) if g.is_content(t, g.STOPWORDS_ES)]
        known = sum(index.has_word(t.text) for t in content)
        grounded_words += known
        total_words += len(content)
        if (
            not facts
            and len(content) >= UNSUPPORTED_SENTENCE_MIN_WORDS
            and known / len(content) < UNSUPPORTED_SENTENCE_GROUNDING
        ):
            facts.append(f"sentence '{sentence[:60]}'")
        unsupported.extend(facts)
    if total_words >= 5 and grounded_words / total_words < 0.2:
        return 1, unsupported
    return clamp(5 - len(unsupported), 2, 5), unsupported


def _partly_known(entity: g.Entity, index: g.SourceIndex) -> bool:
    """Some word of the name is in the source (``Ricky Rubio`` for an article naming
    ``Ricky``): completing a name is not inventing one."""
    return any(index.has_exact_word(k) for k in entity.keys if len(k) >= 3) or index.has_entity(entity)


def fluency_score(summary: str) -> tuple[int, list[str]]:
    """5 minus one per kind of surface problem; 1 when the summary is mostly English."""
    issues: list[str] = []
    tokens = g.tokenize(summary)
    repeats = g.repeated_words(tokens, summary)
    issues += [f"repeated word '{a.text}'" for a, _ in repeats[:2]]
    prose = [(a, b) for a, b in g.split_sentences(summary) if not _BULLET_RE.match(summary[a:b])]
    lower_starts = [summary[a:b] for a, b in prose if _first_letter(summary[a:b]).islower()]
    if lower_starts:
        issues.append(f"sentence starting in lowercase: '{lower_starts[0][:30]}'")
    english = [t.folded for t in tokens if t.text.islower() and t.folded in _EN_ONLY_WORDS]
    function_words = [t for t in tokens if t.folded in g.STOPWORDS]
    if len(english) >= 5 and len(english) > 0.5 * max(1, len(function_words)):
        return 1, ["written in English"]
    if len(set(english)) >= 2:
        issues.append(f"English words mixed in: {', '.join(sorted(set(english))[:4])}")
    last_line = summary.rstrip().rsplit("\n", 1)[-1]
    if not _BULLET_RE.match(last_line) and summary.rstrip()[-1:] not in tuple(".!?…\"»)”'"):
        issues.append("no final punctuation")
    if any("¿" not in m.group() for m in re.finditer(r"[^.!?\n]*\?", summary)):
        issues.append("question without opening '¿'")
    issues += [message for _, _, message in spanish_grammar_errors(summary)]
    if re.search(r"\s[,.;:](?!\d)|,,|\.\.(?!\.)", summary):
        issues.append("misplaced punctuation")
    return clamp(5 - len(issues), 1, 5), issues


def spanish_grammar_errors(text: str) -> list[tuple[int, int, str]]:
    """Frequent slips, conservatively: ``a lanzado`` (for ``ha``), ``los consumidor`` (plural
    article after a preposition, singular noun), ``El proyecto costaron`` (plural preterite
    after a sentence-initial singular article + noun)."""
    tokens = g.tokenize(text)
    errors = []
    for i, token in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if text[token.end : nxt.start] != " ":
            continue
        prev = tokens[i - 1].folded if i else ""
        word = nxt.folded
        plain = nxt.text.isalpha() and nxt.text.islower() and word not in g.STOPWORDS_ES
        if token.text == "a" and plain and word.endswith(("ado", "ido")) and word not in _ES_NOT_PARTICIPLES:
            errors.append((token.start, nxt.end, f"'a {nxt.text}' should be 'ha {nxt.text}'"))
        elif (
            token.folded in ("los", "las", "unos", "unas")
            and plain
            and len(word) > 3
            and word[-1] not in "sx"
            and word not in _ES_INVARIABLE_AFTER_ARTICLE
            and word not in g.NUMBER_WORDS["es"]
            and not word.endswith("mente")
            and (token.folded.startswith("un") or prev in _ES_PREPOSITIONS)
        ):
            errors.append((token.start, nxt.end, f"plural '{token.text}' before singular '{nxt.text}'"))
        elif (
            token.folded in ("el", "la")
            and plain
            and word[-1] not in "s"
            and g.is_sentence_initial(text, token.start)
            and i + 2 < len(tokens)
            and text[nxt.end : tokens[i + 2].start] == " "
            and tokens[i + 2].folded.endswith(("aron", "ieron", "yeron"))
        ):
            verb = tokens[i + 2]
            errors.append(
                (token.start, verb.end, f"plural verb '{verb.text}' after singular '{token.text} {nxt.text}'")
            )
    return errors


def _first_letter(text: str) -> str:
    stripped = _BULLET_RE.sub("", text)
    return next((ch for ch in stripped if ch.isalpha()), "A")


def relevance_score(article: str, summary: str, copy: bool) -> tuple[int, list[str]]:
    """5, minus 1 for chatbot phrases, 1 for subjective valuations the article does not make,
    1 for an overlong or redundant summary; 1 when the summary is (nearly) the article."""
    if copy:
        return 1, ["nearly the article itself"]
    issues = []
    folded, folded_article = g.fold(summary), g.fold(article)
    chatbot = _ES_CHATBOT.search(folded)
    if chatbot:
        issues.append(f"chatbot phrase '{chatbot.group()}'")
    valuations = [
        v
        for v in _ES_SUBJECTIVE
        if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", folded)
        and not re.search(rf"(?<!\w){re.escape(v)}(?!\w)", folded_article)
    ]
    if valuations:
        issues.append(f"subjective valuation '{valuations[0]}'")
    ratio = _length_ratio(article, summary)
    if ratio > LONG_SUMMARY_RATIO:
        issues.append(f"long summary ({ratio:.0%} of the article)")
    if _has_redundant_sentences(summary):
        issues.append("redundant sentences")
    return clamp(5 - len(issues), 1, 5), issues


def _length_ratio(article: str, summary: str) -> float:
    words = len(g.tokenize(article))
    return len(g.tokenize(summary)) / words if words else 0.0


def is_near_copy(article: str, summary: str) -> bool:
    """The summary is (almost) the article: as long as it, or mostly copied trigrams."""
    ratio = _length_ratio(article, summary)
    if ratio > COPY_LENGTH_RATIO:
        return True
    summary_grams = g.word_ngrams(g.tokenize(summary), 3)
    if ratio < 0.5 or not summary_grams:
        return False
    copied = len(summary_grams & g.word_ngrams(g.tokenize(article), 3)) / len(summary_grams)
    return copied > COPY_TRIGRAM_SHARE


def _has_redundant_sentences(summary: str) -> bool:
    stems = [g.stem_set(summary[a:b], g.STOPWORDS_ES) for a, b in g.split_sentences(summary)]
    for i, left in enumerate(stems):
        for right in stems[i + 1 :]:
            union = left | right
            if len(union) >= 4 and len(left & right) / len(union) > 0.7:
                return True
    return False


def five_w_score(article: str, summary: str, copy: bool) -> tuple[int, dict[str, object]]:
    """Share of the article's key names, numbers and dates that the summary keeps."""
    if copy:
        return 5, {"near_copy": True}
    keys = key_facts(article)
    summary_index = g.SourceIndex([summary], lang="es")
    if keys:
        kept = [label for label, present in ((k, p(summary_index)) for k, p in keys) if present]
        share = len(kept) / len(keys)
        info: dict[str, object] = {"keys": [k for k, _ in keys], "kept": kept}
    else:
        frequent = [
            s for s, _ in Counter(g.stem(t.text) for t in g.content_tokens(article, g.STOPWORDS_ES)).most_common(10)
        ]
        share = g.overlap(set(frequent), g.stem_set(summary, g.STOPWORDS_ES))[0]
        info = {"frequent_stems": frequent}
    info["share"] = round(share, 3)
    score = 5 if share >= 0.85 else 4 if share >= 0.65 else 3 if share >= 0.4 else 2 if share > 0 else 1
    return score, info


@g.recent
def key_facts(article: str) -> tuple[tuple[str, Callable[[g.SourceIndex], bool]], ...]:
    """The article's W's: its most frequent names, the numbers and dates of its lead (kept for
    the last articles seen: an article comes with several summaries)."""
    entities = g.extract_entities(article, g.STOPWORDS_ES)
    counts = Counter(e.keys for e in entities)
    first: dict[tuple[str, ...], g.Entity] = {}
    for e in entities:
        first.setdefault(e.keys, e)
    ranked = sorted(counts, key=lambda k: (-counts[k], first[k].start))[:KEY_ENTITIES]
    facts: list[tuple[str, Callable[[g.SourceIndex], bool]]] = [
        (first[k].text, _entity_present(k)) for k in ranked if k
    ]
    sentences = g.split_sentences(article)[:3]
    lead = article[sentences[0][0] : sentences[-1][1]] if sentences else ""
    numbers = [n for n in g.extract_numbers(lead, "es", words=False)]
    seen: set[float] = set()
    for number in numbers:
        if number.value not in seen and len(seen) < KEY_NUMBERS:
            seen.add(number.value)
            facts.append((number.text, lambda idx, n=number: idx.has_number(n)))
    months = [t.folded for t in g.tokenize(lead) if t.folded in _ES_MONTHS]
    if months:
        facts.append((months[0], lambda idx, m=months[0]: m in idx.words))
    return tuple(facts)


def _entity_present(keys: tuple[str, ...]) -> Callable[[g.SourceIndex], bool]:
    """A name is kept when most of its words are (``Pedro Sánchez`` ~ ``Sánchez``)."""
    words = [k for k in keys if len(k) >= 3] or list(keys)

    def present(index: g.SourceIndex) -> bool:
        found = sum(index.has_word(w) for w in words)
        return found >= max(1, math.ceil(len(words) / 2))

    return present
