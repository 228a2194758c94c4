"""augmentation_quality (Italian, SP and SC 1-3): semantic preservation from content-stem overlap
and lost or added numbers and names; syntax correctness from Italian agreement slips.
"""

from __future__ import annotations

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.offline.calibration import prediction_score
from judgelab.backend.annotators.offline.heuristics import OFFLINE
from judgelab.backend.annotators.offline.text import (
    read_text,
)
from judgelab.backend.draft import Draft
from judgelab.configs.schema import get_schema

#: SP 3 needs this share of the original's content stems in the generated text (and no
#: number or name lost or added); SP 1 needs a lost number or three lost facts (numbers and
#: names) together with a share below SP_POOR_RECALL. Everything else is SP 2. The guidelines
#: expect SP 1 to be rare (< 10%): the lexical overlap alone never gives SP 1, because
#: rephrasing legitimately changes most words.
SP_FULL_RECALL = 0.5
SP_POOR_RECALL = 0.3

_IT_MASC_SING = frozenset("il del al dal nel sul col un uno dello allo dallo nello sullo".split())
_IT_FEM_SING = frozenset("una della alla dalla nella sulla".split())
_IT_PLURAL = frozenset("i dei ai dai nei sui coi degli agli dagli negli sugli delle alle dalle nelle sulle".split())
#: Invariable or irregular nouns that break the ending rules (i media, la mano, il brindisi).
_IT_INVARIABLE = frozenset(
    """media euro foto moto auto radio video cinema boa mila gorilla vaglia sosia boia
    mano dinamo libido eco crisi analisi tesi ipotesi sintesi bici brindisi bisturi alibi
    safari taxi bikini lunedi martedi mercoledi giovedi venerdi re gnu extra ultra pro""".split()
)
_IT_AUXILIARIES = frozenset("ha hanno ho abbiamo avete hai aveva avevano".split())
_IT_NOUN_SUFFIXES = ("zione", "sione", "mento", "enza", "anza", "ezza", "tura")
_IT_HA_IDIOMS = frozenset(
    """bisogno paura fame sete ragione torto intenzione diritto luogo senso voglia
    fretta freddo caldo sonno cura tendenza speranza fiducia occasione""".split()
)
_IT_DETERMINERS = _IT_MASC_SING | _IT_FEM_SING | _IT_PLURAL | {"la", "lo", "le", "gli", "l"}
#: Adverbs, prepositions and pronouns that end like nouns but never agree (contro, sopra).
_IT_NON_AGREEING = frozenset(
    """contro sopra sotto dentro fuori verso dopo senza presso lungo oltre circa tramite durante
    secondo mediante nonostante attraverso ora allora ancora sempre invece almeno ormai appena
    insieme proprio subito presto troppo tanto poco spesso quasi solo soltanto anzi infatti
    pure nemmeno neanche neppure mica forse magari davvero certo meno prima qui qua cosa
    come quanto tale tali stesso stessa altro altra altri altre primo prima ultimo ultima
    perfino persino intorno accanto davanti dietro vicino lontano oggi domani stasera""".split()
)
_IT_PARTICIPLE_SINGULAR = (
    "ato",
    "ata",
    "ito",
    "ita",
    "uto",
    "uta",
    "uso",
    "usa",
    "esso",
    "essa",
    "tto",
    "tta",
    "sto",
    "sta",
)
_IT_NUMERAL_CONTEXT = frozenset("articolo art comma legge numero n punto pagina ore capitolo decreto paragrafo".split())


SCHEMA = "augmentation_quality"
#: No public human SP/SC ratings exist to fit scores on: every suggested rating scores the uniform
#: prior over the 3-point scale (an empty generated text is SP 1 by the guidelines' definition).
UNFITTED_RATING_SCORE = round(1 / 3, 3)


@OFFLINE.register(SCHEMA, reads=("original", "generated"))
def annotate_augmentation_quality(data: dict) -> Draft:
    schema = get_schema(SCHEMA)
    sp_control = schema.item_control(schema.constant("semantic_preservation"))
    sc_control = schema.item_control(schema.constant("syntax_correctness"))
    original = read_text(data, "original")
    generated = read_text(data, "generated")
    if not generated.strip():
        draft = Draft(info={"empty_generated": True})
        if original.strip():
            draft.choices[sp_control] = ["1"]
            draft.scores[sp_control] = 1.0
        draft.score = prediction_score(draft) if draft.choices else 0.0
        return draft
    sp, sp_info = semantic_preservation(original, generated)
    errors = syntax_errors(generated)
    sc = 3 if not errors else 2 if len(errors) <= 3 else 1
    draft = Draft(
        choices={sp_control: [str(sp)], sc_control: [str(sc)]},
        scores={sp_control: UNFITTED_RATING_SCORE, sc_control: UNFITTED_RATING_SCORE},
        info={**sp_info, "syntax_errors": [msg for _, _, msg in errors]},
    )
    draft.score = prediction_score(draft)
    return draft


def semantic_preservation(original: str, generated: str) -> tuple[int, dict[str, object]]:
    """SP 1-3 from content-stem overlap and lost/added numbers and names."""
    stops = g.STOPWORDS_IT
    recall, precision = g.overlap(g.stem_set(original, stops), g.stem_set(generated, stops))
    orig_index = g.SourceIndex([original], lang="it")
    gen_index = g.SourceIndex([generated], lang="it")
    lost_numbers = [n.text for n in g.extract_numbers(original, "it") if not gen_index.has_number(n)]
    added_numbers = [n.text for n in g.extract_numbers(generated, "it") if not orig_index.has_number(n)]
    lost_names = [e.text for e in g.extract_entities(original, stops) if not gen_index.has_entity(e)]
    added_names = [e.text for e in g.extract_entities(generated, stops) if not orig_index.has_entity(e)]
    lost_facts = len(lost_numbers) + len(lost_names)
    if recall >= SP_FULL_RECALL and not (lost_facts or added_numbers or added_names):
        sp = 3
    elif recall < SP_POOR_RECALL and (lost_numbers or lost_facts >= 3):
        sp = 1
    else:
        sp = 2
    info: dict[str, object] = {
        "recall": round(recall, 3),
        "precision": round(precision, 3),
        "lost_numbers": lost_numbers,
        "added_numbers": added_numbers,
        "lost_names": lost_names,
        "added_names": added_names,
    }
    return sp, info


def syntax_errors(text: str) -> list[tuple[int, int, str]]:
    """Italian grammar slips an LLM makes: article-noun agreement, ``ha`` + noun, repeated
    words, singular noun after a numeral. Conservative: each rule skips known exceptions."""
    tokens = g.tokenize(text)
    errors = [(a.start, b.end, f"repeated word '{a.text}'") for a, b in g.repeated_words(tokens, text)]
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is None or not _same_phrase(text, token, nxt):
            continue
        third = tokens[i + 2] if i + 2 < len(tokens) else None
        if third is not None and not _same_phrase(text, nxt, third):
            third = None
        message = (
            _article_agreement(token, nxt, text[token.end : nxt.start] != " ")
            or _auxiliary_noun(token, nxt, third)
            or _numeral_agreement(tokens[i - 1] if i else None, token, nxt)
            or _modifier_agreement(token, nxt, third)
        )
        if message:
            end = third.end if message.startswith("modifier") and third else nxt.end
            errors.append((token.start, end, message))
    return errors


def _same_phrase(text: str, left: g.Token, right: g.Token) -> bool:
    """Only a space or an elision apostrophe between two words."""
    return text[left.end : right.start] in {" ", "'", "’"}


def _italian_word(token: g.Token) -> bool:
    return (
        len(token.text) > 3
        and token.text.isalpha()
        and token.text.islower()
        and token.folded not in g.STOPWORDS_IT
        and token.folded not in _IT_INVARIABLE
        and token.folded not in _IT_NON_AGREEING
        and token.text[-1] not in "àèéìòù"
    )


def _modifier_agreement(article: g.Token, noun: g.Token, word: g.Token | None) -> str | None:
    """``i dati diffuso``: a singular participle right after a plain plural article + noun.

    Only the plain articles ``i``/``gli``/``le`` (after ``dei``/``sui``... the participle may
    agree with an earlier noun: ``la nave dei migranti arrivata``) and only participle-like
    endings (a verb or a noun there is often correct: ``i toni danneggia``)."""
    if word is None or article.folded not in {"i", "gli", "le"}:
        return None
    if not (_italian_word(noun) and _italian_word(word)) or noun.folded[-1] not in "ie":
        return None
    if word.folded.endswith(_IT_PARTICIPLE_SINGULAR):
        return f"modifier '{word.text}' is singular after plural '{article.text} {noun.text}'"
    return None


def _article_agreement(article: g.Token, word: g.Token, elided: bool = False) -> str | None:
    art, noun = article.folded, word.folded
    if elided and art == "un":
        art = "una"  # un'invasione is the feminine article
    if art not in _IT_DETERMINERS or not _italian_word(word):
        return None
    if art in _IT_PLURAL and noun[-1] in "oa":
        return f"plural '{article.text}' before singular '{word.text}'"
    if art in _IT_MASC_SING and (noun[-1] == "i" or noun.endswith(("zione", "sione", "gione"))):
        return f"masculine singular '{article.text}' before '{word.text}'"
    if art in _IT_FEM_SING and noun[-1] in "oi":
        return f"feminine singular '{article.text}' before '{word.text}'"
    return None


def _auxiliary_noun(aux: g.Token, word: g.Token, after: g.Token | None) -> str | None:
    """``ha approvazione un piano``: a noun where the past participle should be."""
    if aux.folded not in _IT_AUXILIARIES or after is None or not _italian_word(word):
        return None
    noun = word.folded
    if noun in _IT_HA_IDIOMS or not noun.endswith(_IT_NOUN_SUFFIXES):
        return None
    if after.folded in _IT_DETERMINERS:
        return f"'{aux.text} {word.text}': noun where a past participle is expected"
    return None


def _numeral_agreement(before: g.Token | None, number: g.Token, word: g.Token) -> str | None:
    """``5 miliardo``: a singular noun after a numeral above one (years and article numbers
    such as ``articolo 5 comma`` excepted)."""
    value = g.NUMBER_WORDS["it"].get(number.folded)
    if value is None and number.text.isdigit():
        value = int(number.text)
        if 1800 <= value <= 2100 and len(number.text) == 4:
            return None
    if value is None or value <= 1 or not _italian_word(word) or word.folded[-1] not in "oa":
        return None
    if before is not None and (
        before.folded in _IT_NUMERAL_CONTEXT
        or before.folded in _IT_DETERMINERS
        or before.folded in {"tra", "fra", "dell", "all", "dall", "nell", "sull"}
    ):
        return None  # articolo 5 comma, dal 27 brigata (a date), una delle due usata
    return f"singular '{word.text}' after the numeral {number.text}"
