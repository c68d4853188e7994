"""The kernel choice by CPU (mmrag.cpu_kernels) on faked feature flags: every kind of processor a
user may have, the refusal of bf16 where it would be emulated, and where the choice shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from mmrag import cpu_kernels
from mmrag.config import EmbedConfig
from mmrag.cpu_kernels import U8U8_SESSION_ENTRY, CpuFeatures, choose_text_kernels, parse_cpuinfo
from mmrag.errors import InvalidInput

BASE_X86 = {"fpu", "sse4_1", "sse4_2", "avx", "fma"}
VNNI_512 = CpuFeatures("x86_64", frozenset(BASE_X86 | {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}))
AVX_VNNI = CpuFeatures("x86_64", frozenset(BASE_X86 | {"avx2", "avx_vnni"}))  # Intel client chips (Alder Lake on)
AVX2 = CpuFeatures("x86_64", frozenset(BASE_X86 | {"avx2"}))  # AMD Zen 2/3: the owners' failing CI machine
AVX512_NO_VNNI = CpuFeatures("x86_64", frozenset(BASE_X86 | {"avx2", "avx512f", "avx512bw"}))  # Skylake-SP
SSE_ONLY = CpuFeatures("x86_64", frozenset(BASE_X86))
ARM_DOT = CpuFeatures("aarch64", frozenset({"fp", "asimd", "asimddp"}))  # Graviton 2, Apple M1
ARM_BF16 = CpuFeatures("aarch64", frozenset({"fp", "asimd", "asimddp", "bf16", "i8mm"}))  # Graviton 3
ARM_NEON = CpuFeatures("aarch64", frozenset({"fp", "asimd"}))  # Cortex-A72 (Graviton 1, Raspberry Pi 4)
OTHER = CpuFeatures("riscv64", frozenset({"rv64imafdc"}))


@pytest.mark.parametrize(("cpu", "label", "u8u8"), [
    (VNNI_512, "int8/u8s8", False), (AVX_VNNI, "int8/u8s8", False), (AVX2, "int8/u8u8", True),
    (AVX512_NO_VNNI, "int8/u8u8", True), (SSE_ONLY, "float32/torch-cpu", False), (ARM_DOT, "int8/arm-sdot", False),
    (ARM_NEON, "float32/torch-cpu", False), (OTHER, "float32/torch-cpu", False)])
def test_auto_picks_the_exact_kernels_of_each_kind_of_cpu(cpu: CpuFeatures, label: str, u8u8: bool) -> None:
    chosen = choose_text_kernels("auto", cpu)
    assert chosen.label == label and chosen.reason.startswith("auto: ") and chosen.cpu == cpu.kind
    assert (U8U8_SESSION_ENTRY in chosen.session_config) == u8u8
    assert chosen.session_config in ((), (U8U8_SESSION_ENTRY,))


def test_int8_asked_for_gets_the_exact_kernels_and_forcing_one_is_for_measuring() -> None:
    assert choose_text_kernels("int8", AVX2).label == "int8/u8u8"
    assert "saturat" in choose_text_kernels("int8", AVX2).reason
    assert choose_text_kernels("int8", SSE_ONLY).label == "int8/u8u8"  # asked for: runs, exactly
    assert choose_text_kernels("int8", ARM_NEON).label == "int8/arm-neon"
    assert choose_text_kernels("int8", OTHER).label == "int8/mlas"
    forced = choose_text_kernels("int8", AVX2, int8_kernels="u8s8")  # the broken kernels, to measure them
    assert forced.label == "int8/u8s8" and forced.session_config == () and "inexact" in forced.reason
    both = choose_text_kernels("int8", VNNI_512, int8_kernels="u8u8")
    assert both.session_config == (U8U8_SESSION_ENTRY,) and "forced" in both.reason
    with pytest.raises(InvalidInput, match="exist on x86 only; this CPU is ARM64 dotprod"):
        choose_text_kernels("int8", ARM_DOT, int8_kernels="u8u8")
    with pytest.raises(InvalidInput, match="'u4' are not one of: auto, u8s8, u8u8"):
        choose_text_kernels("int8", AVX2, int8_kernels="u4")


def test_bf16_runs_only_where_the_cpu_multiplies_it_natively() -> None:
    assert choose_text_kernels("bf16", VNNI_512).label == "bf16/torch-cpu"
    assert choose_text_kernels("bf16", ARM_BF16).label == "bf16/torch-cpu"
    for cpu, kind in ((AVX2, "x86-64 AVX2 (no VNNI)"), (AVX_VNNI, "x86-64 AVX-VNNI"), (ARM_DOT, "ARM64 dotprod")):
        with pytest.raises(InvalidInput) as caught:
            choose_text_kernels("bf16", cpu)
        message = caught.value.message
        assert f"this one is {kind}" in message and "5x slower" in message and "'float32'" in message, message
    with pytest.raises(InvalidInput, match=r"Use 'auto' \(here: int8/u8u8\)"):
        choose_text_kernels("bf16", AVX2)
    assert choose_text_kernels("bf16", AVX2, device="cuda").label == "bf16/torch-cuda"  # the GPU's own bf16


def test_a_gpu_device_gets_float32_on_auto_and_float32_is_float32() -> None:
    assert choose_text_kernels("auto", VNNI_512, device="cuda:1").label == "float32/torch-cuda"
    assert choose_text_kernels("float32", AVX2).label == "float32/torch-cpu"
    assert choose_text_kernels("int8", VNNI_512, device="cuda").label == "int8/u8s8"  # int8 is ONNX Runtime on CPU
    with pytest.raises(InvalidInput, match="'fp16' is not one of: auto, float32, int8, bf16"):
        choose_text_kernels("fp16", VNNI_512)


def test_cpuinfo_of_x86_and_arm_machines_parses_to_their_kind() -> None:
    x86 = ("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
           "flags\t\t: fpu sse4_1 avx avx2 fma\nprocessor\t: 1\nflags\t\t: fpu\n")
    cpu = parse_cpuinfo(x86, "x86_64")
    assert cpu.kind == "x86-64 AVX2 (no VNNI)" and cpu.model == "AMD EPYC 7B13" and "avx2" in cpu.flags
    arm = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes crc32 asimddp bf16\nCPU part\t: 0xd40\n"
    cpu = parse_cpuinfo(arm, "aarch64")
    assert cpu.kind == "ARM64 dotprod + BF16" and choose_text_kernels("auto", cpu).label == "int8/arm-sdot"
    assert parse_cpuinfo("", "x86_64").kind == "x86-64 (no AVX2)"
    assert VNNI_512.kind == "x86-64 AVX-512 VNNI + BF16" and AVX512_NO_VNNI.kind == "x86-64 AVX-512 (no VNNI)"


def test_this_machine_is_read_from_proc_cpuinfo() -> None:
    cpu = cpu_kernels.this_cpu()
    text = Path("/proc/cpuinfo").read_text()
    assert cpu.flags and all(flag in text for flag in list(cpu.flags)[:20])
    assert cpu.x86 == ("flags" in text)


@pytest.fixture()
def avx2_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as if it ran on an AVX2-only CPU (the choice's caches cleared before and after)."""
    monkeypatch.setattr(cpu_kernels, "this_cpu", lambda: AVX2)
    cpu_kernels.kernels_here.cache_clear()
    yield
    cpu_kernels.kernels_here.cache_clear()


def test_a_bf16_setting_is_refused_at_start_up_on_such_a_cpu(avx2_machine: None, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="needs a CPU that multiplies bfloat16 natively"):
        EmbedConfig(text_precision="bf16", device="cpu")
    assert EmbedConfig(text_precision="bf16", device="cpu", service_url="http://127.0.0.1:9").service_url  # its CPU
    from cli import app

    result = CliRunner().invoke(app, ["embed-serve", "--text-precision", "bf16", "--device", "cpu"])
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and "x86-64 AVX2 (no VNNI)" in said and "Use 'auto'" in said, said
    monkeypatch.setenv("MMRAG_EMBED__DEVICE", "cpu")
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    assert "text model kernels on this CPU (x86-64 AVX2 (no VNNI)): int8/u8u8: auto: no VNNI" in result.output
