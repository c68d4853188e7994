"""Which kernels the text model runs on this processor: read the CPU's features once, choose per kind.

The int8 text model is ONNX Runtime's dynamic quantisation (weights s8 per output channel, activations
u8). How exact its matrix products are depends on the processor (ONNX Runtime's
``session.x64quantprecision`` note, Intel's "nuances of int8 computations"):

- x86 with VNNI (AVX-512 VNNI, AVX-VNNI on client chips, AMX-INT8): the u8s8 dot products sum into 32
  bits, exact. Kernels ``u8s8`` (ONNX Runtime's default).
- x86 without VNNI (AVX2, AVX-512 without VNNI, SSE4.1): the fast u8s8 multiply sums pairs of products
  into a *saturating 16-bit* intermediate, so large activations times large weights clip (measured by the
  owners on an AVX2-only EPYC: cosine to float32 p1 0.985, min 0.981). Kernels ``u8u8``: the session option
  ``session.x64quantprecision=1`` makes ONNX Runtime rewrite each s8 weight as u8 (``w + 128``, zero point
  moved with it: the same products) and run its u8u8 kernels, which widen to 16 bits before multiplying:
  exact. The model file is the same; only the session differs.
- ARM64: ONNX Runtime's u8s8 kernels widen (NEON) or use the dot-product instructions (``asimddp``),
  exact either way. Kernels ``arm-sdot`` / ``arm-neon``. Not measured here (no ARM machine): the code path
  is chosen from the feature flags and unit-tested on them.

``auto`` (the default of ``embed.text_precision``) is int8 where an exact int8 kernel is expected to be
faster than float32 (x86 with AVX2 or VNNI, ARM with dot products) and float32 elsewhere (x86 without AVX2,
ARM without dot products, other processors, and a CUDA device, where torch float32 runs on the GPU).
``bf16`` runs only where the CPU multiplies bfloat16 natively (AVX512_BF16 or AMX-BF16 on x86, BF16 on ARM)
or on a CUDA device; elsewhere torch emulates it about five times slower than float32 (measured by the
owners on the AVX2 EPYC), so it is refused with what to use instead.

The choice (:class:`TextKernels`) is what ``/health`` and ``mmrag config`` show, what the int8 export's
cache key includes, and what a corpus records beside its precision. Pure functions over
:class:`CpuFeatures`; :func:`this_cpu` reads ``/proc/cpuinfo`` once per process.
"""

from __future__ import annotations

import functools
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mmrag.errors import InvalidInput

TEXT_PRECISION_SETTINGS: tuple[str, ...] = ("auto", "float32", "int8", "bf16")
"""What ``embed.text_precision`` may say: ``auto`` (chosen by the CPU) or one precision."""
INT8_KERNELS: tuple[str, ...] = ("auto", "u8s8", "u8u8")
"""Which int8 kernels to run (``auto``: by the CPU; ``u8s8`` / ``u8u8``: forced, for measuring)."""

_VNNI = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
_X86_BF16 = frozenset({"avx512_bf16", "amx_bf16"})
_X86 = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})
_ARM = frozenset({"aarch64", "arm64"})
U8U8_SESSION_ENTRY = ("session.x64quantprecision", "1")
"""ONNX Runtime's switch to its u8u8 kernels (``kOrtSessionOptionsAvx2PrecisionMode``)."""


@dataclass(frozen=True, slots=True)
class CpuFeatures:
    """The processor as the kernel choice sees it: its architecture and feature flags."""

    arch: str  # x86_64, aarch64, ... (platform.machine(), lower case)
    flags: frozenset[str] = field(default_factory=frozenset)  # /proc/cpuinfo "flags" (x86) or "Features" (ARM)
    model: str = ""  # "model name" where the kernel gives one

    @property
    def x86(self) -> bool:
        return self.arch in _X86

    @property
    def arm(self) -> bool:
        return self.arch in _ARM

    @property
    def vnni(self) -> bool:
        return self.x86 and bool(self.flags & _VNNI)

    @property
    def native_bf16(self) -> bool:
        return bool(self.flags & _X86_BF16) if self.x86 else (self.arm and "bf16" in self.flags)

    @property
    def kind(self) -> str:
        """One phrase for people: ``x86-64 AVX-512 VNNI``, ``x86-64 AVX2 (no VNNI)``, ``ARM64 dotprod``, ..."""
        if self.x86:
            if "avx512_vnni" in self.flags or "amx_int8" in self.flags:
                base = "x86-64 AVX-512 VNNI"
            elif "avx_vnni" in self.flags:
                base = "x86-64 AVX-VNNI"
            elif "avx512bw" in self.flags:
                base = "x86-64 AVX-512 (no VNNI)"
            elif "avx2" in self.flags:
                base = "x86-64 AVX2 (no VNNI)"
            else:
                base = "x86-64 (no AVX2)"
            return base + (" + BF16" if self.native_bf16 else "")
        if self.arm:
            return ("ARM64 dotprod" if "asimddp" in self.flags else "ARM64 NEON") + (
                " + BF16" if self.native_bf16 else "")
        return self.arch or "unknown"


@dataclass(frozen=True, slots=True)
class TextKernels:
    """What the text model computes in on this machine, with which kernels, and why."""

    precision: str  # float32 | int8 | bf16: what vectors are computed in (recorded per corpus)
    kernels: str  # u8s8 | u8u8 | arm-sdot | arm-neon | mlas (int8); torch-cpu | torch-cuda (float32, bf16)
    cpu: str  # CpuFeatures.kind
    reason: str  # one sentence: why this choice here
    session_config: tuple[tuple[str, str], ...] = ()  # ONNX Runtime session config entries (int8)

    @property
    def label(self) -> str:
        """``int8/u8u8``: what a corpus records and the int8 cache key includes."""
        return f"{self.precision}/{self.kernels}"

    def as_dict(self) -> dict[str, str]:
        return {"precision": self.precision, "kernels": self.kernels, "cpu": self.cpu, "reason": self.reason}


def parse_cpuinfo(text: str, machine: str) -> CpuFeatures:
    """Features from the text of ``/proc/cpuinfo`` (first processor's ``flags`` or ``Features`` line)."""
    flags: frozenset[str] = frozenset()
    model = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("flags", "features") and not flags:
            flags = frozenset(value.split())
        elif key == "model name" and not model:
            model = value.strip()
    return CpuFeatures(arch=machine.lower(), flags=flags, model=model)


@functools.cache
def this_cpu() -> CpuFeatures:
    """This machine's features (read once). Without ``/proc/cpuinfo`` (macOS, Windows): no flags, except an
    Apple-silicon Mac, whose cores all have the dot-product instructions."""
    machine = platform.machine().lower()
    try:
        return parse_cpuinfo(Path("/proc/cpuinfo").read_text(errors="replace"), machine)
    except OSError:
        flags = frozenset({"asimd", "asimddp"}) if sys.platform == "darwin" and machine in _ARM else frozenset()
        return CpuFeatures(arch=machine, flags=flags)


def _int8(cpu: CpuFeatures, forced: str) -> TextKernels:
    if cpu.x86:
        exact_u8s8 = cpu.vnni
        kernels = forced if forced != "auto" else ("u8s8" if exact_u8s8 else "u8u8")
        if kernels == "u8u8":
            why = ("no VNNI: u8s8 would sum pairs of products in saturating 16 bits, so ONNX Runtime's u8u8 "
                   "kernels (session.x64quantprecision), exact" if not exact_u8s8 else
                   "u8u8 kernels forced (exact; VNNI's u8s8 are exact and faster here)")
            return TextKernels("int8", "u8u8", cpu.kind, why, (U8U8_SESSION_ENTRY,))
        why = ("VNNI: u8s8 dot products sum in 32 bits, exact" if exact_u8s8 else
               "u8s8 kernels forced on a CPU without VNNI: 16-bit intermediate sums saturate (inexact)")
        return TextKernels("int8", "u8s8", cpu.kind, why)
    if forced != "auto":
        raise InvalidInput(f"int8 kernels {forced!r} exist on x86 only; this CPU is {cpu.kind}: use auto")
    if cpu.arm:
        dot = "asimddp" in cpu.flags
        return TextKernels("int8", "arm-sdot" if dot else "arm-neon", cpu.kind,
                           "ARM int8 products widen to 32 bits, exact" + ("" if dot else " (no dot product: slow)"))
    return TextKernels("int8", "mlas", cpu.kind, "ONNX Runtime's default int8 kernels for this processor")


def choose_text_kernels(setting: str, cpu: CpuFeatures, *, device: str = "cpu",
                        int8_kernels: str = "auto") -> TextKernels:
    """The text model's precision and kernels for ``setting`` (``embed.text_precision``) on ``cpu``.

    ``device`` is the resolved torch device (``cpu``, ``cuda``, ``cuda:1``): int8 always runs in ONNX
    Runtime on the CPU; float32 and bf16 run on the device. Raises :class:`InvalidInput` for a value that is
    not allowed and for bf16 on a CPU that cannot multiply bfloat16 natively (with what to use instead)."""
    if setting not in TEXT_PRECISION_SETTINGS:
        raise InvalidInput(f"text precision {setting!r} is not one of: {', '.join(TEXT_PRECISION_SETTINGS)}")
    if int8_kernels not in INT8_KERNELS:
        raise InvalidInput(f"int8 kernels {int8_kernels!r} are not one of: {', '.join(INT8_KERNELS)}")
    on_gpu = not device.startswith("cpu")
    torch_kernels = "torch-cuda" if on_gpu else "torch-cpu"
    if setting == "auto":
        if on_gpu:
            return TextKernels("float32", torch_kernels, cpu.kind, f"auto on {device}: torch float32 on the GPU")
        if (cpu.x86 and (cpu.vnni or "avx2" in cpu.flags)) or (cpu.arm and "asimddp" in cpu.flags):
            choice = _int8(cpu, int8_kernels)
            return TextKernels(choice.precision, choice.kernels, choice.cpu, "auto: " + choice.reason,
                               choice.session_config)
        return TextKernels("float32", torch_kernels, cpu.kind,
                           "auto: no int8 kernel here is known to beat float32 (x86 needs AVX2, ARM dot products)")
    if setting == "int8":
        return _int8(cpu, int8_kernels)
    if setting == "bf16":
        if on_gpu:
            return TextKernels("bf16", torch_kernels, cpu.kind, f"bf16 autocast on {device}")
        if not cpu.native_bf16:
            raise InvalidInput(
                f"text precision 'bf16' needs a CPU that multiplies bfloat16 natively (AVX512_BF16 or AMX-BF16 on "
                f"x86, BF16 on ARM); this one is {cpu.kind}, where torch emulates bf16 about 5x slower than "
                f"float32. Use 'auto' (here: {choose_text_kernels('auto', cpu).label}) or 'float32'")
        return TextKernels("bf16", torch_kernels, cpu.kind, "native bfloat16 matmuls (torch autocast)")
    return TextKernels("float32", torch_kernels, cpu.kind, "float32 as set")


@functools.cache
def kernels_here(setting: str, device: str = "cpu") -> TextKernels:
    """:func:`choose_text_kernels` on this machine's CPU, ``device`` as configured (``auto`` resolved)."""
    from mmrag.devices import resolve_device

    return choose_text_kernels(setting, this_cpu(), device=resolve_device(device))
