"""VLM backends are registered by name like embedders and spaces; ``none`` builds none."""

from __future__ import annotations

from mmrag.generate import factory
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.generate.vllm_backend import VLLMBackend
from mmrag.vlm_config import VLMConfig
from tests.generate.test_engine_overlap import WaitingBackend


def test_built_in_backends_resolve_by_name_and_none_builds_none() -> None:
    assert factory._factory("vllm") is VLLMBackend
    assert factory._factory("transformers") == TransformersBackend.load
    assert factory.build_backend(VLMConfig(backend="none")) is None
    assert isinstance(factory.build_backend(VLMConfig(backend="vllm")), VLLMBackend)  # opens no connection yet


def test_a_registered_backend_serves_its_name() -> None:
    built = factory.VLM_REGISTRY.entries["transformers"]
    factory.register_vlm_backend("transformers", lambda config: WaitingBackend())
    try:
        assert isinstance(factory.build_backend(VLMConfig(backend="transformers")), WaitingBackend)
    finally:
        factory.VLM_REGISTRY.entries["transformers"] = built
