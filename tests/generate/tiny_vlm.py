"""Offline builders of a tiny random-weight Qwen2.5-VL (real architecture, real processor classes).

``save_tiny_qwen25vl(folder)`` writes a model + processor folder that loads through the same
``from_pretrained`` code as a hub id such as ``Qwen/Qwen2.5-VL-3B-Instruct``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2Tokenizer,
    Qwen2VLImageProcessor,
)
from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
CORPUS = [
    "What is the revenue in 2023?",
    "Describe the image.",
    "A chart showing quarterly sales.",
    "The quick brown fox jumps over the lazy dog.",
    "Answer using the pages. Cite pages as [1].",
    "user assistant system",
    "Table of contents, introduction, methods, results, conclusion.",
] * 50
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}"
    "{% endif %}{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}"
)


def build_tokenizer(vocab_size: int = 400) -> Qwen2Tokenizer:
    """A byte-level BPE trained offline, wrapped as the real Qwen2 tokenizer class."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    t.train_from_iterator(CORPUS, trainer)
    d = json.loads(t.to_str())
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in d["model"]["merges"]]
    tok = Qwen2Tokenizer(
        vocab=dict(d["model"]["vocab"]), merges=merges, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.add_special_tokens({"additional_special_tokens": SPECIAL[1:]})
    return tok


def build_processor(
    tok: Qwen2Tokenizer, min_pixels: int = 56 * 56, max_pixels: int = 1280 * 28 * 28
) -> Qwen2_5_VLProcessor:
    image = Qwen2VLImageProcessor(
        min_pixels=min_pixels, max_pixels=max_pixels, patch_size=14, temporal_patch_size=2, merge_size=2
    )
    return Qwen2_5_VLProcessor(
        image_processor=image,
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=CHAT_TEMPLATE,
    )


def qwen25vl_config(
    tok: Qwen2Tokenizer,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    vis_depth: int = 2,
    vis_hidden: int = 32,
    vis_heads: int = 2,
    vis_intermediate: int = 64,
) -> Qwen2_5_VLConfig:
    c = tok.convert_tokens_to_ids
    head_dim = hidden // heads
    section = [head_dim // 8, head_dim * 3 // 16, head_dim * 3 // 16]  # sums to head_dim / 2
    section[0] += head_dim // 2 - sum(section)
    text: dict[str, Any] = dict(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=32768,
        rope_parameters={"rope_type": "default", "mrope_section": section, "rope_theta": 1e6},
        bos_token_id=c("<|endoftext|>"),
        eos_token_id=c("<|im_end|>"),
        pad_token_id=c("<|endoftext|>"),
    )
    vision = dict(
        depth=vis_depth,
        hidden_size=vis_hidden,
        intermediate_size=vis_intermediate,
        num_heads=vis_heads,
        out_hidden_size=hidden,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
        window_size=112,
        fullatt_block_indexes=[vis_depth - 1],
    )
    return Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=c("<|image_pad|>"),
        video_token_id=c("<|video_pad|>"),
        vision_start_token_id=c("<|vision_start|>"),
        vision_end_token_id=c("<|vision_end|>"),
    )


def save_tiny_qwen25vl(folder: Path, seed: int = 0, **sizes: int) -> Path:
    """Build and save model + processor to ``folder``; returns it."""
    torch.manual_seed(seed)
    tok = build_tokenizer()
    model = Qwen2_5_VLForConditionalGeneration(qwen25vl_config(tok, **sizes)).eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    build_processor(tok).save_pretrained(folder)
    return folder
