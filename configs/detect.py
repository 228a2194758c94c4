"""Which of the known schemas a project's label config is.

Compares structural fingerprints (controls, their targets and label values, data-bound
objects; see :attr:`LabelConfig.fingerprint`), so renamed titles, new colours, edited
instructions or added styling do not change the answer. A config that shares too little with
every schema is "custom" (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from judgelab.configs.label_config import LabelConfig, parse_label_config
from judgelab.configs.schema import Schema

MIN_SIMILARITY = 0.6


@dataclass(frozen=True)
class Detection:
    schema: Schema | None
    similarity: float

    @property
    def name(self) -> str:
        return self.schema.name if self.schema else "custom"


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two fingerprints."""
    return len(a & b) / len(a | b) if a or b else 0.0


def detect_schema(label_config: str | LabelConfig, schemas: dict[str, Schema]) -> Detection:
    """The schema ``label_config`` (its text, or the config already parsed) is, by fingerprint.

    A text that is a schema's config as it stands (a project judgelab created, unedited; blank
    lines around it aside) is that schema without being parsed: parsing needs the SDK's label
    interface, half a second to import at the start of every command that looks a project up."""
    if isinstance(label_config, str):
        text = label_config.strip()  # Label Studio keeps a config without its last newline
        for schema in schemas.values():
            if text == schema.config_xml.strip():
                return Detection(schema, 1.0)
    parsed = label_config if isinstance(label_config, LabelConfig) else parse_label_config(label_config)
    fingerprint = parsed.fingerprint
    best: Detection = Detection(None, 0.0)
    for schema in schemas.values():
        score = similarity(fingerprint, parse_label_config(schema.config_xml).fingerprint)
        if score > best.similarity:
            best = Detection(schema, score)
    return best if best.similarity >= MIN_SIMILARITY else Detection(None, best.similarity)
