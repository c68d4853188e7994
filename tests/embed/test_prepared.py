"""prepare/compute: the forward on pre-tokenised, collated rows gives the vectors of the
one-call paths (sentence-transformers' encode, the processors' own batches)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from mmrag.embed.base import Embedder
from mmrag.embed.features import collate_rows, split_rows

TEXTS = ["short", "a somewhat longer sentence about quarterly revenue and growth",
         "Table 3 shows the results.", "word " * 400]  # the last one is truncated to max_seq_length


@pytest.fixture(scope="module")
def minilm(load: Callable[[str], Embedder]) -> Embedder:
    return load("st:sentence-transformers/all-MiniLM-L6-v2")


def test_pretokenised_forward_equals_encode(minilm: Embedder) -> None:
    model = minilm.model  # type: ignore[attr-defined]
    want = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    got = np.stack(minilm.embed_batch(TEXTS))
    np.testing.assert_allclose(got, want, atol=1e-5)
    rows = minilm.prepare(TEXTS)
    assert [minilm.size(r) for r in rows] == [int(r["attention_mask"].sum()) for r in rows]
    assert minilm.size(rows[3]) == minilm.max_seq_length  # type: ignore[attr-defined]
    shuffled = [rows[i] for i in (2, 0, 3, 1)]  # a batch in another order, padded to other lengths
    again = np.stack(minilm.compute(shuffled))
    np.testing.assert_allclose(again, want[[2, 0, 3, 1]], atol=1e-5)
    np.testing.assert_allclose(np.stack(minilm.compute(rows[:1])), want[:1], atol=1e-5)  # alone: no padding


def test_many_texts_are_embedded_in_max_batch_chunks(minilm: Embedder) -> None:
    texts = [f"sentence number {i} " + "x " * (i % 7) for i in range(minilm.max_batch + 5)]
    want = minilm.model.encode(texts, normalize_embeddings=True, show_progress_bar=False)  # type: ignore[attr-defined]
    np.testing.assert_allclose(np.stack(minilm.embed_batch(texts)), want, atol=1e-5)


@pytest.mark.parametrize("side", ["left", "right"])
def test_split_and_collate_round_trip(side: str) -> None:
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]]) if side == "right" else torch.tensor([[0, 5, 6, 7], [0, 0, 8, 9]])
    mask = (ids != 0).long()
    batch = {"input_ids": ids, "attention_mask": mask, "pixel_values": torch.arange(8.0).view(2, 2, 2),
             "modality": "text"}
    rows = split_rows(batch)
    assert [r["input_ids"].tolist() for r in rows] == [[[5, 6, 7]], [[8, 9]]]
    assert rows[1]["modality"] == "text" and rows[1]["pixel_values"].shape == (1, 2, 2)
    back = collate_rows(rows, pad_values={"input_ids": 0}, padding_side=side)  # type: ignore[arg-type]
    assert torch.equal(back["input_ids"][:, -3:] if side == "left" else back["input_ids"][:, :3],
                       ids[:, -3:] if side == "left" else ids[:, :3])
    assert torch.equal(back["attention_mask"].sum(1), mask.sum(1)) and back["modality"] == "text"


def test_collate_pads_patches_with_zeros_at_the_end() -> None:
    a = {"attention_mask": torch.ones(1, 2, dtype=torch.long), "pixel_values": torch.ones(1, 3, 4)}
    b = {"attention_mask": torch.ones(1, 4, dtype=torch.long), "pixel_values": torch.full((1, 5, 4), 2.0)}
    out = collate_rows([a, b])
    assert out["pixel_values"].shape == (2, 5, 4) and out["attention_mask"].tolist() == [[1, 1, 0, 0], [1] * 4]
    assert out["pixel_values"][0, 3:].abs().sum() == 0 and out["pixel_values"][0, :3].eq(1).all()


def test_multivector_prepared_rows_equal_the_processor_batch(load: Callable[[str], Embedder],
                                                             multivector_specs: dict[str, str],
                                                             images: list) -> None:  # type: ignore[type-arg]
    queries = ["hello", "a longer query about the revenue table", "x"]
    for spec in multivector_specs.values():
        emb = load(spec)
        with torch.inference_mode():
            want = (emb._run(emb._process_images([im.convert("RGB") for im in images]), images=True)  # type: ignore[attr-defined]
                    + emb._run(emb._process_queries(queries), images=False))  # type: ignore[attr-defined]
        prepared = emb.prepare([*images, *queries])
        got = emb.compute(prepared[::-1])[::-1]  # collated in another order: same rows
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=1e-4)


def test_open_clip_prepared_rows_equal_the_towers(load: Callable[[str], Embedder], clip_spec: str,
                                                  images: list) -> None:  # type: ignore[type-arg]
    emb = load(clip_spec)
    mixed = [images[0], "a chart", images[1], "quarterly sales"]
    with torch.inference_mode():
        pix = torch.stack([emb.preprocess(im.convert("RGB")) for im in images[:2]])  # type: ignore[attr-defined]
        want_img = emb.model.encode_image(pix, normalize=True).numpy()  # type: ignore[attr-defined]
        want_txt = emb.model.encode_text(emb.tokenizer(["a chart", "quarterly sales"]), normalize=True).numpy()  # type: ignore[attr-defined]
    got = emb.embed_batch(mixed)
    for g, w in zip(got, [want_img[0], want_txt[0], want_img[1], want_txt[1]], strict=True):
        np.testing.assert_allclose(g, w, atol=1e-5)


def test_forwards_stay_within_the_token_budget_with_the_same_vectors(minilm: Embedder,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["word " * n for n in (300, 200, 90, 40, 40, 8, 3)] + TEXTS
    want = np.stack(minilm.embed_batch(texts))
    padded: list[int] = []
    forward = minilm._forward  # type: ignore[attr-defined]

    def recorded(rows: list[dict[str, torch.Tensor]]) -> object:
        padded.append(len(rows) * max(minilm.size(r) for r in rows))
        return forward(rows)

    monkeypatch.setattr(minilm, "_forward", recorded)
    monkeypatch.setattr(minilm, "max_batch_tokens", 300)
    got = np.stack(minilm.embed_batch(texts))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert len(padded) > 3 and max(padded) <= 300
