"""Sentence embeddings without downloading anything at run time.

WordLlama ships its 256-dimension token embeddings and its tokenizer inside
the wheel (no torch). Its loader looks for the tokenizer under
`<cache_dir>/tokenizers/`, so the packaged tokenizer file is copied into a
folder under NEWSROOM_DATA_DIR once and the loader is told never to download.
The model is loaded once per process and shared: it is read-only.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Protocol

import numpy as np


class EmbedderError(Exception):
    """The embedding model cannot be loaded; the message says why in plain words."""


class Embedder(Protocol):
    dim: int
    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, shape (len(texts), dim), float32. Empty text -> zeros."""
        ...


class WordLlamaEmbedder:
    name = "wordllama l2_supercat 256"

    def __init__(self, cache_dir: Path) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as e:  # pragma: no cover - it is in requirements.txt
            raise EmbedderError(f"wordllama is not installed: {e}") from e
        packaged = Path(wordllama.__file__).parent / "tokenizers"
        target = cache_dir / "tokenizers"
        target.mkdir(parents=True, exist_ok=True)
        for config in packaged.glob("*.json"):
            dest = target / config.name
            if not dest.exists() or dest.stat().st_size != config.stat().st_size:
                # Copy beside, then rename: another process may be loading too.
                tmp = dest.with_suffix(".tmp")
                shutil.copyfile(config, tmp)
                tmp.replace(dest)
        try:
            self._model = WordLlama.load(cache_dir=cache_dir, disable_download=True)
        except FileNotFoundError as e:
            raise EmbedderError(f"WordLlama's packaged files are missing: {e}") from e
        self.dim = int(self._model.embedding.shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The tokenizer pads a batch to its longest text: cap the length so one
        # long article does not make a whole batch slow.
        clipped = [(t or "")[:600] for t in texts]
        # Batches of similar length waste less on padding.
        order = sorted(range(len(clipped)), key=lambda k: len(clipped[k]))
        vectors = self._model.embed(
            [clipped[k] for k in order], norm=False, batch_size=128
        )
        out = np.empty_like(vectors)
        out[order] = vectors
        return unit_rows(out)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; all-zero rows stay zero (not NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out = vectors / norms
    out[~np.isfinite(out)] = 0.0
    return out


_lock = threading.Lock()
_loaded: dict[str, Embedder] = {}


def get_embedder(cache_dir: Path | None = None) -> Embedder:
    """The process's embedder, loaded on first use."""
    if cache_dir is None:
        from django.conf import settings

        cache_dir = Path(settings.NEWSROOM_EMBED_CACHE_DIR)
    key = str(cache_dir)
    with _lock:
        if key not in _loaded:
            _loaded[key] = WordLlamaEmbedder(cache_dir)
        return _loaded[key]
