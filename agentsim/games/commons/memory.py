"""An agent's memory and its retrieval by recency, importance and relevance (GovSim's
RetrieveComponent, after Park et al.'s generative agents; GovSim's
simulation/persona/cognition/retrieve.py and memory/associative_memory.py).

Every memory expires (GovSim's `expiration`): retrieval on a day sees only the memories that
expire after it. score = 0.5 * recency + 3 * importance + 2 * relevance, where recency is
0.99^i for the i-th most recent memory, importance is the 1-10 rating scaled to [0, 1], and
relevance is the cosine similarity of the memory's and the focal point's embeddings. Memories
marked `always` (the stock, the catch, the universalization sentence, the agreed limit: GovSim's
`always_include`, importance 10, never rated) rank above every other memory, the most recent
first (so they are retrieved as long as they fit in the top k). The top k per focal point are
merged and shown oldest first.

Embeddings: TF-IDF bag-of-words vectors in numpy (lower-cased word tokens, smoothed IDF over
the agent's memories and the focal point, L2-normalised), so retrieval needs no model and no
download. GovSim used a sentence-embedding model; `Embedder` is the one place to swap one in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np

RECENCY_WEIGHT, IMPORTANCE_WEIGHT, RELEVANCE_WEIGHT = 0.5, 3.0, 2.0
RECENCY_DECAY = 0.99
_WORD = re.compile(r"[a-z0-9]+")


class MemoryItem(NamedTuple):
    """One memory: when (`date`, and `order` among all memories of the run), what, until
    when it is retrieved (`expires`, exclusive: on that day it is gone), how important (None
    until the agent has rated it), and whether it is always retrieved (importance 10)."""

    order: int
    date: str  # YYYY-MM-DD, as the prompt shows it
    text: str
    kind: str  # stock, catch, universalization, limit, chat, insight
    expires: str  # YYYY-MM-DD
    importance: int | None = None
    always: bool = False


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


class TfidfEmbedder:
    """Bag-of-words TF-IDF over the texts given together (the memories and the focal point)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        tokens = [_WORD.findall(text.lower()) for text in texts]
        vocabulary = {word: column for column, word in enumerate(sorted({word for words in tokens for word in words}))}
        counts = np.zeros((len(texts), max(1, len(vocabulary))))
        for row, words in enumerate(tokens):
            for word in words:
                counts[row, vocabulary[word]] += 1
        document_frequency = (counts > 0).sum(axis=0)
        idf = np.log((1 + len(texts)) / (1 + document_frequency)) + 1
        vectors = counts * idf
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


DEFAULT_EMBEDDER = TfidfEmbedder()


def retrieve(memories: Sequence[MemoryItem], focal_points: Sequence[str], top_k: int, today: str,
             embedder: Embedder = DEFAULT_EMBEDDER) -> tuple[MemoryItem, ...]:
    """The memories to show on `today` for these focal points, oldest first."""
    current = [item for item in memories if item.expires > today]
    if not current:
        return ()
    newest_first = sorted(current, key=lambda item: item.order, reverse=True)
    recency = np.array([RECENCY_DECAY ** position for position in range(len(newest_first))])
    importance = np.array([(_importance(item) - 1) / 9 for item in newest_first])
    base = RECENCY_WEIGHT * recency + IMPORTANCE_WEIGHT * importance
    always = np.array([item.always for item in newest_first])
    chosen: set[int] = set()
    for focal in focal_points:
        vectors = embedder.embed([item.text for item in newest_first] + [focal])
        relevance = vectors[:-1] @ vectors[-1]
        scores = base + RELEVANCE_WEIGHT * relevance
        scores[always] = scores.max() + 1
        # Stable ordering on ties: the more recent memory first.
        ranked = sorted(range(len(newest_first)), key=lambda position: (-scores[position], position))
        chosen.update(newest_first[position].order for position in ranked[:top_k])
    return tuple(sorted((item for item in current if item.order in chosen), key=lambda item: item.order))


def _importance(item: MemoryItem) -> int:
    """An always-retrieved memory counts 10, as GovSim stores it; an unrated one the lowest."""
    return 10 if item.always else item.importance or 1
