"""Text utilities for lexical grounding: tokens, numbers, names, overlap, sentence splitting.

Everything works on the exact text it is given and returns code-point offsets into it
(``text[start:end]``), so spans built from these pieces can be placed on a Label Studio
``Text`` object unchanged. Matching uses a *folded* form (lowercase, accents removed) and a
prefix stem (the first five folded letters), a cheap "lemma" that works reasonably for
English, Spanish and Italian::

    >>> [t.text for t in tokenize("L'energia è 5,2% più cara!")]
    ['L', 'energia', 'è', '5', '2', 'più', 'cara']
    >>> stem("rinnovabili"), stem("Città")
    ('rinno', 'citta')
    >>> [(n.text, n.value) for n in extract_numbers("17.5 km or 10,000 steps", lang="en")]
    [('17.5', 17.5), ('10,000', 10000.0)]
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache, wraps
from typing import Any, TypeVar

STEM_SIZE = 5
ACRONYM_MAX_WORDS = 5
TEXT_GAP = 1000  # token positions left between two texts of one index: no window spans both

STOPWORDS_EN = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve don didn doesn isn wasn aren weren won wouldn couldn shouldn hasn haven
    hadn can't cannot let lets us one ones thing things really even still get got gets getting
    go goes going went gone make makes made much many well back also yet ever never always
    someone something anyone anything everyone everything nothing nobody somebody anybody
    everybody else lot lots kind sort bit like way another every either neither though
    around since within without next behind during among toward towards upon across along
    beside besides beyond near inside outside throughout away although unless whether till
    onto per via despite except instead perhaps quite rather almost already soon later
    """.split()
)

STOPWORDS_ES = frozenset(
    """
    a al algo algunas algunos ante antes como con contra cual cuales cuando de del desde donde
    durante e el ella ellas ellos en entre era erais eran eras eres es esa esas ese eso esos esta
    estaba estaban estado estamos estan estar estas este esto estos estoy fue fueron fui ha han
    has hasta hay la las le les lo los mas me mi mis mucho muchos muy nada ni no nos nosotros o
    os otra otras otro otros para pero poco por porque que quien quienes se sea sean ser si
    sido siempre sin sobre son su sus tambien tanto te tiene tienen todo todos tu tus un una unas
    uno unos y ya yo hoy ayer manana este esta estos estas ano semana mes segun tras sus cuyo
    cuya aunque mientras donde asi ademas despues luego entonces tambien solo puede pueden
    hace hacer ha han haber habia habian sera seran
    """.split()
)

STOPWORDS_IT = frozenset(
    """
    a ad agli ai al alla alle allo all anche ancora avere aveva avevano c che chi ci col come
    con cui da dagli dai dal dalla dalle dallo dall degli dei del della delle dello dell di dove
    e ed era erano essere gli ha hai hanno ho i il in io l la le lei lo loro lui ma mi mia mie
    miei mio ne negli nei nel nella nelle nello nell noi non nostra nostre nostri nostro o ogni
    per perche piu poi quale quali quando quanto quella quelle quelli quello questa queste
    questi questo se sei si sia siamo sono su sua sue sugli sui sul sulla sulle sullo sull suo
    suoi tra fra tu tua tue tuo tuoi tutti tutto tutte tutta un una uno vi voi gia essere stato
    stata stati state molto molti molte anche cosi dopo mentre secondo oggi ieri quindi dunque
    """.split()
)

STOPWORDS = STOPWORDS_EN | STOPWORDS_ES | STOPWORDS_IT


NUMBER_WORDS = {
    "en": {
        "two": 2,
        "three": 3,
        "four": 4,
        "five": 5,
        "six": 6,
        "seven": 7,
        "eight": 8,
        "nine": 9,
        "ten": 10,
        "eleven": 11,
        "twelve": 12,
        "thirteen": 13,
        "fourteen": 14,
        "fifteen": 15,
        "sixteen": 16,
        "seventeen": 17,
        "eighteen": 18,
        "nineteen": 19,
        "twenty": 20,
        "thirty": 30,
        "forty": 40,
        "fifty": 50,
        "sixty": 60,
        "seventy": 70,
        "eighty": 80,
        "ninety": 90,
        "hundred": 100,
        "thousand": 1000,
        "dozen": 12,
        "twice": 2,
        "half": 0.5,
        "million": 1_000_000,
    },
    "es": {
        "dos": 2,
        "tres": 3,
        "cuatro": 4,
        "cinco": 5,
        "seis": 6,
        "siete": 7,
        "ocho": 8,
        "nueve": 9,
        "diez": 10,
        "once": 11,
        "doce": 12,
        "quince": 15,
        "veinte": 20,
        "treinta": 30,
        "cuarenta": 40,
        "cincuenta": 50,
        "cien": 100,
        "ciento": 100,
        "mil": 1000,
    },
    "it": {
        "due": 2,
        "tre": 3,
        "quattro": 4,
        "cinque": 5,
        "sette": 7,
        "otto": 8,
        "nove": 9,
        "dieci": 10,
        "undici": 11,
        "dodici": 12,
        "quindici": 15,
        "venti": 20,
        "trenta": 30,
        "quaranta": 40,
        "cinquanta": 50,
        "cento": 100,
        "mille": 1000,
    },
}

#: English irregular verb forms -> base form, so "told" meets "tells" and "ran" meets "runs".
_IRREGULAR_EN = {
    form: base
    for base, forms in {
        "be": "was were been being",
        "begin": "began begun",
        "bite": "bit bitten",
        "break": "broke broken",
        "bring": "brought",
        "build": "built",
        "buy": "bought",
        "catch": "caught",
        "choose": "chose chosen",
        "come": "came",
        "dig": "dug",
        "draw": "drew drawn",
        "drink": "drank drunk",
        "drive": "drove driven",
        "eat": "ate eaten",
        "fall": "fell fallen",
        "feed": "fed",
        "feel": "felt",
        "fight": "fought",
        "find": "found",
        "fly": "flew flown",
        "forget": "forgot forgotten",
        "freeze": "froze frozen",
        "get": "got gotten",
        "give": "gave given",
        "go": "went gone",
        "grow": "grew grown",
        "hang": "hung",
        "have": "had has",
        "hear": "heard",
        "hide": "hid hidden",
        "hold": "held",
        "keep": "kept",
        "know": "knew known",
        "lay": "laid",
        "lead": "led",
        "leave": "left",
        "lend": "lent",
        "lie": "lay lain",
        "lose": "lost",
        "make": "made",
        "mean": "meant",
        "meet": "met",
        "pay": "paid",
        "ride": "rode ridden",
        "ring": "rang rung",
        "rise": "rose risen",
        "run": "ran",
        "say": "said",
        "see": "saw seen",
        "sell": "sold",
        "send": "sent",
        "shake": "shook shaken",
        "shoot": "shot",
        "sing": "sang sung",
        "sink": "sank sunk",
        "sit": "sat",
        "sleep": "slept",
        "speak": "spoke spoken",
        "spend": "spent",
        "stand": "stood",
        "steal": "stole stolen",
        "stick": "stuck",
        "strike": "struck",
        "swim": "swam swum",
        "take": "took taken",
        "teach": "taught",
        "tear": "tore torn",
        "tell": "told",
        "think": "thought",
        "throw": "threw thrown",
        "understand": "understood",
        "wake": "woke woken",
        "wear": "wore worn",
        "win": "won",
        "write": "wrote written",
        "die": "dying",
        "lie_": "lying",
        "child": "children",
        "man": "men",
        "woman": "women",
        "person": "people",
        "foot": "feet",
        "tooth": "teeth",
        "mouse": "mice",
    }.items()
    for form in forms.split()
}
_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
_WORD_RE = re.compile(r"[^\W_]+")
_NUMBER_RE = re.compile(r"(?<![\d.,])\d+(?:[.,]\d+)*")
_SENTENCE_END_RE = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s|$)|\n+")
_CLAUSE_BREAK_RE = re.compile(
    r"[,;:()\u2013\u2014]|\s(?:and|but|so|because|while|although|though|whereas|which|who|"
    r"y|pero|porque|mientras|aunque|que|e|ma|perché|mentre|che)\s",
    re.IGNORECASE,
)
_EDGE_CHARS = " \t\r\n.,;:!?¡¿\"'“”‘’«»()[]{}-–—…*•·"
_JOINERS = frozenset({"of", "de", "del", "di", "della", "da", "la", "le", "von", "van", "the"})


@dataclass(frozen=True)
class Token:
    """A run of letters/digits in a text, with its code-point offsets."""

    text: str
    start: int
    end: int

    @cached_property
    def folded(self) -> str:  # kept on the token: matching asks for it many times
        return fold(self.text)

    @property
    def stem(self) -> str:
        return stem(self.text)

    @property
    def is_capitalised(self) -> bool:
        return self.text[:1].isupper()

    @property
    def has_digit(self) -> bool:
        return any(ch.isdigit() for ch in self.text)


@dataclass(frozen=True)
class NumberMention:
    """A number written in digits (``17.5``, ``10,000``) or as a word (``six``)."""

    text: str
    start: int
    end: int
    value: float


@dataclass(frozen=True)
class Entity:
    """A run of capitalised words (a name, a place, an acronym)."""

    text: str
    start: int
    end: int
    tokens: tuple[Token, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """Folded words of the name without joiners (``Bank of America`` -> bank, america)."""
        return tuple(t.folded for t in self.tokens if t.folded not in _JOINERS)


@lru_cache(maxsize=1 << 16)
def fold(text: str) -> str:
    """Lowercase and remove accents (``Città`` -> ``citta``); used only for matching."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fold_aligned(text: str) -> str:
    """Like :func:`fold` but one character per character, so offsets found in the folded
    text are offsets in ``text`` (characters that would expand, like ``ﬁ``, stay as they are).
    """
    out = []
    for ch in text:
        lowered = ch.lower()
        folded = fold(ch)
        out.append(folded if len(folded) == 1 else lowered if len(lowered) == 1 else ch)
    return "".join(out)


@lru_cache(maxsize=1 << 16)
def stem(word: str, size: int = STEM_SIZE) -> str:
    """Prefix stem of the folded word after a light suffix strip, so that short inflected
    words meet their base form: ``ministers`` -> ``minis``, ``swapped`` -> ``swap``,
    ``making`` -> ``mak`` (as ``make``)."""
    folded = fold(word)
    folded = _IRREGULAR_EN.get(folded, folded).rstrip("_")
    for suffix, replacement in _SUFFIXES:
        if folded.endswith(suffix) and len(folded) - len(suffix) >= 3:
            folded = folded[: len(folded) - len(suffix)] + replacement
            break
    if len(folded) >= 4 and folded[-1] == folded[-2] and folded[-1] not in "aeiou":
        folded = folded[:-1]
    if len(folded) >= 4 and folded[-1] == "e":
        folded = folded[:-1]
    return folded[:size]


def tokenize(text: str) -> list[Token]:
    """Letter/digit runs of ``text`` with offsets; apostrophes and hyphens split words."""
    return list(_tokens(text))


# An annotator reads one source several times (its index, its numbers, its measures): the last
# texts' tokens and numbers are kept, so a source is split once per task, not once per reader.
RECENT_TEXTS = 32
#: What :func:`recent` keeps in all, in characters of the sources: an index holds about 58 bytes a
#: character, and 40 sources at the annotators' cap of 60,000 characters raised a process's RSS by
#: 107 MiB with 32 of them kept, by 53 MiB with this bound; 32 sources of a few kB (a hotel's
#: descriptions, a news article) are all kept.
RECENT_SOURCE_CHARS = 500_000

_R = TypeVar("_R")


def recent(build: Callable[..., _R]) -> Callable[..., _R]:
    """``build(*args)`` kept for the last sources it was asked about (the arguments are the key:
    texts, a tuple of texts, a language): a study shows one source with several summaries (an
    article with each model's, a hotel's descriptions with each aspect's, a story, a post), and
    what is made of the source alone is made once for all of them. At most :data:`RECENT_TEXTS`
    results, made of at most :data:`RECENT_SOURCE_CHARS` characters of text in all; safe from
    several threads (a result is only read once made)."""
    kept: OrderedDict[tuple[Any, ...], tuple[_R, int]] = OrderedDict()
    lock = threading.Lock()
    held = 0

    def chars(values: Iterable[Any]) -> int:
        return sum(len(v) if isinstance(v, str) else chars(v) if isinstance(v, tuple) else 0 for v in values)

    @wraps(build)
    def get(*args: Any, **named: Any) -> _R:
        nonlocal held
        key = (*args, *sorted(named.items()))
        with lock:
            if key in kept:
                kept.move_to_end(key)
                return kept[key][0]
        made, size = build(*args, **named), chars(key)
        with lock:
            if key not in kept and size <= RECENT_SOURCE_CHARS:
                kept[key] = (made, size)
                held += size
                while len(kept) > RECENT_TEXTS or held > RECENT_SOURCE_CHARS:
                    held -= kept.popitem(last=False)[1][1]
        return made

    return get


@lru_cache(maxsize=RECENT_TEXTS)
def _tokens(text: str) -> tuple[Token, ...]:
    return tuple(Token(m.group(), m.start(), m.end()) for m in _WORD_RE.finditer(text))


def is_content(token: Token, stopwords: frozenset[str] = STOPWORDS) -> bool:
    """True for a word that carries content: not a stopword, not a number, 3+ letters."""
    folded = token.folded
    return len(folded) >= 3 and not token.has_digit and folded not in stopwords


def content_tokens(text: str, stopwords: frozenset[str] = STOPWORDS) -> list[Token]:
    return [t for t in _tokens(text) if is_content(t, stopwords)]


def parse_number(raw: str, lang: str = "en") -> float | None:
    """Value of a digit string; ``,`` or ``.`` followed by 3 digits is a thousands separator
    in the language's convention (``10,000`` in English, ``10.000`` in Spanish/Italian)."""
    thousands = "," if lang == "en" else "."
    parts = re.split(r"([.,])", raw)
    digits = ""
    for i, part in enumerate(parts):
        if part == thousands and i + 1 < len(parts) and len(parts[i + 1]) == 3:
            continue
        digits += "." if part in ".," else part
    if digits.count(".") > 1:
        digits = digits.replace(".", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def extract_numbers(text: str, lang: str = "en", words: bool = True) -> list[NumberMention]:
    """Numbers in ``text``: digit strings, and number words of ``lang`` when ``words``."""
    return list(_numbers(text, lang, words))


@lru_cache(maxsize=RECENT_TEXTS)
def _numbers(text: str, lang: str, words: bool) -> tuple[NumberMention, ...]:
    found = []
    for m in _NUMBER_RE.finditer(text):
        raw = m.group().rstrip(".,")
        value = parse_number(raw, lang)
        if value is not None:
            found.append(NumberMention(raw, m.start(), m.start() + len(raw), value))
    if words and lang == "en":
        found.extend(_english_number_phrases(text))
    elif words:
        table = NUMBER_WORDS.get(lang, {})
        tokens = _tokens(text)
        for i, token in enumerate(tokens):
            value = table.get(token.folded)
            if value is None and lang == "it" and token.folded == "sei":
                # "sei" is also "you are": a number only before a plural (sei mesi, sei anni)
                following = tokens[i + 1].folded if i + 1 < len(tokens) else ""
                value = 6 if following[-1:] in ("i", "e") and len(following) > 2 else None
            if value is not None:
                found.append(NumberMention(token.text, token.start, token.end, float(value)))
    return tuple(sorted(found, key=lambda n: n.start))


_EN_UNITS = {"one": 1, **{w: v for w, v in NUMBER_WORDS["en"].items() if v < 20 and v >= 1}}
_EN_TENS = {w: v for w, v in NUMBER_WORDS["en"].items() if v in (20, 30, 40, 50, 60, 70, 80, 90)}
_EN_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}


def _english_number_phrases(text: str) -> list[NumberMention]:
    """Number words, compounds included: ``thirty-one``, ``one hundred and twelve``.

    A lone ``one`` is not a number (``one of them``); ``dozen``, ``twice``, ``half`` are."""
    found = []
    tokens = _tokens(text)
    i = 0
    while i < len(tokens):
        if not _is_number_word(tokens[i].folded) and tokens[i].folded not in NUMBER_WORDS["en"]:
            i += 1
            continue
        run = [tokens[i]]
        j = i + 1
        while j < len(tokens) and _is_number_word(tokens[j].folded, allow_and=True):
            gap = text[run[-1].end : tokens[j].start]
            if gap not in (" ", "-") or (
                tokens[j].folded == "and"
                and (
                    run[-1].folded not in _EN_SCALES
                    or j + 1 >= len(tokens)
                    or not _is_number_word(tokens[j + 1].folded)
                )
            ):
                break
            run.append(tokens[j])
            j += 1
        value = _english_number_value([t.folded for t in run if t.folded != "and"])
        if value is not None and not (len(run) == 1 and run[0].folded == "one"):
            found.append(NumberMention(text[run[0].start : run[-1].end], run[0].start, run[-1].end, value))
            i = j
        else:
            i += 1
    return found


def _is_number_word(word: str, allow_and: bool = False) -> bool:
    return word in _EN_UNITS or word in _EN_TENS or word in _EN_SCALES or (allow_and and word == "and")


def _english_number_value(words: list[str]) -> float | None:
    if len(words) == 1 and words[0] in NUMBER_WORDS["en"]:
        return float(NUMBER_WORDS["en"][words[0]])
    if not words or not all(_is_number_word(w) for w in words):
        return None
    total, current = 0, 0
    for word in words:
        if word in _EN_SCALES:
            scale = _EN_SCALES[word]
            if scale == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * scale
                current = 0
        else:
            current += _EN_UNITS.get(word) or _EN_TENS.get(word, 0)
    return float(total + current)


def is_list_marker(text: str, number: NumberMention) -> bool:
    """``1.`` or ``2)`` opening a line: a list number, not a fact."""
    line_start = text.rfind("\n", 0, number.start) + 1
    return (
        not text[line_start : number.start].strip()
        and text[number.end : number.end + 1] in (".", ")")
        and text[number.end + 1 : number.end + 2] in (" ", "\t", "")
    )


def is_sentence_initial(text: str, start: int) -> bool:
    """True when only spaces, quotes or bullet marks separate ``start`` from a sentence end."""
    i = start - 1
    while i >= 0 and (text[i].isspace() or text[i] in "\"'“”‘’«»([*•·-–—¿¡"):
        if text[i] == "\n":
            return True
        i -= 1
    return i < 0 or text[i] in ".!?…:;" or (text[i].isdigit() and _is_list_number(text, i))


def _is_list_number(text: str, i: int) -> bool:
    j = i
    while j >= 0 and text[j].isdigit():
        j -= 1
    return j < 0 or text[j] == "\n"


def extract_entities(text: str, stopwords: frozenset[str] = STOPWORDS, include_initial: bool = False) -> list[Entity]:
    """Runs of capitalised words (``Dubai Marina``, ``Bank of America``, ``NATO``).

    A capitalised word that starts a sentence is kept only when it is followed by another
    capitalised word, is an acronym, or ``include_initial`` is set, and it is not a stopword.
    """
    tokens = _tokens(text)
    entities: list[Entity] = []
    i = 0
    while i < len(tokens):
        if not _name_like(tokens[i], stopwords):
            i += 1
            continue
        run = [tokens[i]]
        j = i + 1
        while j < len(tokens):
            if _adjacent(text, run[-1], tokens[j]) and _name_like(tokens[j], stopwords):
                run.append(tokens[j])
                j += 1
            elif (
                tokens[j].folded in _JOINERS
                and j + 1 < len(tokens)
                and _adjacent(text, run[-1], tokens[j])
                and _adjacent(text, tokens[j], tokens[j + 1])
                and _name_like(tokens[j + 1], stopwords)
            ):
                run.extend([tokens[j], tokens[j + 1]])
                j += 2
            else:
                break
        if is_sentence_initial(text, run[0].start) and not include_initial:
            if len(run) == 1 and not _is_acronym(run[0].text):
                i = j
                continue
        entities.append(Entity(text[run[0].start : run[-1].end], run[0].start, run[-1].end, tuple(run)))
        i = j
    return entities


def without_initial_word(text: str, entity: Entity) -> Entity | None:
    """The entity minus a sentence-initial first word (``Sisters Nadia`` -> ``Nadia``);
    ``None`` when nothing is left. A name that starts a sentence cannot be told from an
    ordinary capitalised word, so only the rest of the run is trusted."""
    tokens = entity.tokens
    if not is_sentence_initial(text, entity.start) or _is_acronym(tokens[0].text):
        return entity
    rest = tokens[1:]
    while rest and rest[0].folded in _JOINERS:
        rest = rest[1:]
    if not rest:
        return None
    return Entity(text[rest[0].start : rest[-1].end], rest[0].start, rest[-1].end, tuple(rest))


def _name_like(token: Token, stopwords: frozenset[str]) -> bool:
    return token.is_capitalised and not token.has_digit and token.folded not in stopwords


def _is_acronym(word: str) -> bool:
    return len(word) >= 2 and word.isupper() and word.isalpha()


def _adjacent(text: str, left: Token, right: Token) -> bool:
    """Only spaces or a hyphen between two tokens (no punctuation that ends a name)."""
    gap = text[left.end : right.start]
    return len(gap) <= 2 and all(ch in " -" for ch in gap)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence (and line) offsets, trimmed of surrounding whitespace; never empty."""
    spans = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    return [s for s in (trim_span(text, a, b, keep_end_punct=True) for a, b in spans) if s]


def split_lines(text: str) -> list[tuple[int, int]]:
    """Non-blank lines, trimmed of surrounding whitespace only (bullet marks are kept)."""
    spans, start = [], 0
    for line in text.split("\n"):
        end = start + len(line)
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            spans.append((a, b))
        start = end + 1
    return spans


def split_clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Clauses of ``text[start:end]``: split at commas, semicolons and conjunctions."""
    pieces, cursor = [], start
    for m in _CLAUSE_BREAK_RE.finditer(text, start, end):
        pieces.append((cursor, m.start()))
        cursor = m.end()
    pieces.append((cursor, end))
    return [s for s in (trim_span(text, a, b) for a, b in pieces) if s]


def trim_span(text: str, start: int, end: int, keep_end_punct: bool = False) -> tuple[int, int] | None:
    """Move ``start``/``end`` inwards past spaces and punctuation; ``None`` if nothing is left.

    Offsets are moved, the text is never modified, so ``text[start:end]`` stays valid.
    """
    start, end = max(0, start), min(len(text), end)
    while start < end and text[start] in _EDGE_CHARS:
        start += 1
    while end > start and (text[end - 1].isspace() if keep_end_punct else text[end - 1] in _EDGE_CHARS):
        end -= 1
    if start >= end or not any(ch.isalnum() for ch in text[start:end]):
        return None
    return start, end


class SourceIndex:
    """What a source text contains, for asking "is this word/number/name grounded?".

    Made once and only read after (:func:`shared_index` hands one to every task that shows the
    same source, from several threads of the backend)."""

    def __init__(self, texts: Iterable[str], lang: str = "en", stem_size: int = STEM_SIZE):
        self.lang = lang
        self.stem_size = stem_size
        self.words: set[str] = set()
        self.stems: set[str] = set()
        self.numbers: set[float] = set()
        self.number_keys: set[str] = set()
        self._firsts: list[list[str]] = []  # per text, the first letter of each word
        self._initials: set[str] | None = None
        self.positions: dict[str, list[int]] = {}  # stem -> token positions in the source
        self.length = 0  # tokens indexed
        self._next_position = 0
        for text in texts:
            self._add(text)

    def _add(self, text: str) -> None:
        tokens = _tokens(text)
        offset = self._next_position
        for i, token in enumerate(tokens):
            self.words.add(token.folded)
            token_stem = stem(token.text, self.stem_size)
            self.stems.add(token_stem)
            self.positions.setdefault(token_stem, []).append(offset + i)
        self._firsts.append([token.folded[:1] for token in tokens])
        self._initials = None
        self.length += len(tokens)
        self._next_position = offset + len(tokens) + TEXT_GAP
        for number in extract_numbers(text, self.lang):
            self.numbers.add(round(number.value, 6))
            self.number_keys.add(re.sub(r"\D", "", number.text))

    @property
    def initials(self) -> set[str]:
        """The initials of every run of 2 to ``ACRONYM_MAX_WORDS`` words of one text ("ong" for
        "organizzazioni non governative"): made the first time an acronym is looked up, as most
        sources are never asked for one."""
        if self._initials is None:  # made whole, then kept: a thread never sees it half made
            made = set()
            for firsts in self._firsts:
                for i, initials in enumerate(firsts):
                    for first in firsts[i + 1 : i + ACRONYM_MAX_WORDS]:
                        initials += first
                        made.add(initials)
            self._initials = made
        return self._initials

    def has_word(self, word: str) -> bool:
        folded = fold(word)
        return folded in self.words or stem(word, self.stem_size) in self.stems

    def has_exact_word(self, word: str) -> bool:
        return fold(word) in self.words

    def has_number(self, number: NumberMention) -> bool:
        key = re.sub(r"\D", "", number.text)
        return round(number.value, 6) in self.numbers or (bool(key) and key in self.number_keys)

    def has_entity(self, entity: Entity) -> bool:
        """All words of the name occur, or the name is an acronym of words that do."""
        keys = entity.keys
        if not keys:
            return False
        if all(k in self.words or self.has_word(k) for k in keys):
            return True
        return len(keys) == 1 and _is_acronym(entity.text) and keys[0] in self.initials

    def cooccurrence(self, words: Iterable[str], width: int) -> tuple[float, set[str]]:
        """Largest share of the distinct stems of ``words`` that occur together within one
        window of ``width`` consecutive source tokens, and the stems of that window.

        Low values mean the words exist in the source but never near each other: a line
        that joins details from different places. Stems absent from the source are ignored.

            >>> index = SourceIndex(["The cat sat on the mat. " + "x " * 50 + "A dog barked."])
            >>> index.cooccurrence(["cat", "mat"], 10)[0], index.cooccurrence(["cat", "dog"], 10)[0]
            (1.0, 0.5)
        """
        stems = {stem(w, self.stem_size) for w in words} & self.positions.keys()
        if not stems:
            return 1.0, set()
        occurrences = sorted((p, s) for s in stems for p in self.positions[s])
        counts: dict[str, int] = {}
        best: set[str] = set()
        left = 0
        for position, word_stem in occurrences:
            counts[word_stem] = counts.get(word_stem, 0) + 1
            while position - occurrences[left][0] >= width:
                dropped = occurrences[left][1]
                counts[dropped] -= 1
                if not counts[dropped]:
                    del counts[dropped]
                left += 1
            if len(counts) > len(best):
                best = set(counts)
        return len(best) / len(stems), best

    def grounding(self, tokens: list[Token]) -> float:
        """Share of ``tokens`` whose stem occurs in the source (1.0 for no tokens)."""
        if not tokens:
            return 1.0
        return sum(self.has_word(t.text) for t in tokens) / len(tokens)


@recent
def shared_index(texts: tuple[str, ...], lang: str = "en") -> SourceIndex:
    """The :class:`SourceIndex` of ``texts``, one for every task that shows the same source
    (:func:`recent`); only read it."""
    return SourceIndex(texts, lang=lang)


def stem_set(text: str, stopwords: frozenset[str] = STOPWORDS, size: int = STEM_SIZE) -> set[str]:
    """Stems of the content words of ``text``."""
    return {stem(t.text, size) for t in content_tokens(text, stopwords)}


def overlap(reference: set[str], candidate: set[str]) -> tuple[float, float]:
    """(recall, precision) of ``candidate`` against ``reference``; 1.0 when a side is empty."""
    common = len(reference & candidate)
    recall = common / len(reference) if reference else 1.0
    precision = common / len(candidate) if candidate else 1.0
    return recall, precision


def word_ngrams(tokens: list[Token], n: int) -> set[tuple[str, ...]]:
    folded = [t.folded for t in tokens]
    return {tuple(folded[i : i + n]) for i in range(len(folded) - n + 1)}


def repeated_words(tokens: list[Token], text: str) -> list[tuple[Token, Token]]:
    """Pairs of identical consecutive words separated only by spaces (``the the``)."""
    pairs = []
    for left, right in zip(tokens, tokens[1:], strict=False):
        if (
            left.folded == right.folded
            and not left.has_digit
            and len(left.folded) > 1
            and text[left.end : right.start].strip() == ""
        ):
            pairs.append((left, right))
    return pairs
