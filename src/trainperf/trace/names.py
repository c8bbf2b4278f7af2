"""Names in a Kineto trace: the category of a GPU activity, the collective of a kernel or CPU op.

Categories of GPU activity (the rules of HolisticTraceAnalysis 0.5, ``hta/utils/utils.py``, so
that both give the same numbers): ``communication`` if the name matches ``^nccl.*Kernel``;
``memory`` for memcpy/memset events and names matching ``^(Memcpy|Memset|dma)``; ``other`` for
names matching HTA's non-compute pattern ``(.*Memcpy)|(Memset)|(.*Sync)``; ``compute`` for the
rest. :func:`is_matmul` marks GEMM and fused-attention kernels by name (cuBLAS/cuBLASLt
``gemm``/``nvjet``/``xmma``/``cutlass``, wgmma/hmma kernels, flash/fmha/SDPA forward and backward):
the kernels that drive the tensor pipes, to set against ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``.
NCCL kernel names give the collective (``ncclDevKernel_AllReduce_Sum_f32_RING_LL`` ->
``AllReduce``; ``SendRecv``, ``Send`` and ``Recv`` -> ``SendRecv``), else the kernel's
``Collective name`` argument.
"""

from __future__ import annotations

import re

__all__ = [
    "COLLECTIVES",
    "collective_kind",
    "cpu_comm_kind",
    "is_communication",
    "is_matmul",
    "kernel_category",
    "short_kernel_name",
]

COLLECTIVES = (
    "SendRecv",
    "AllReduce",
    "ReduceScatter",
    "AllGather",
    "Broadcast",
    "Reduce",
    "AllToAll",
    "Barrier",
    "Other",
)
"""Collective kinds, canonical spelling (NCCL's kernel names)."""

_COMM_RE = re.compile(r"^nccl.*Kernel")
_MEMORY_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NONCOMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
_MATMUL_RE = re.compile(
    r"gemm|nvjet|xmma|cutlass|wgmma|hmma|flash|fmha|sdpa.*(fprop|bprop)", re.IGNORECASE
)
_NCCL_KIND_RE = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)")

_KIND_ALIASES = {
    "sendrecv": "SendRecv",
    "send": "SendRecv",
    "recv": "SendRecv",
    "isend": "SendRecv",
    "irecv": "SendRecv",
    "batchisendirecv": "SendRecv",
    "p2p": "SendRecv",
    "allreduce": "AllReduce",
    "reducescatter": "ReduceScatter",
    "allgather": "AllGather",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "alltoall": "AllToAll",
    "alltoallv": "AllToAll",
    "barrier": "Barrier",
}


def collective_kind(name: str | None) -> str | None:
    """Canonical collective kind (one of :data:`COLLECTIVES`) of a kernel or CPU op name.

    ``ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(...)`` -> ``ReduceScatter``;
    ``gloo:all_reduce``, ``nccl:all_reduce``, ``c10d::allreduce_``, ``allreduce`` -> ``AllReduce``;
    ``nccl:_all_gather_base``, ``c10d::_allgather_base_``, ``all_gather_into_tensor`` ->
    ``AllGather``; ``nccl:send 0->1``, ``gloo:recv``, ``ncclDevKernel_SendRecv`` -> ``SendRecv``.
    An unknown name after an NCCL/gloo/c10d prefix -> ``Other``; a bare name that is no known
    collective -> None.
    """
    if not name:
        return None
    m = _NCCL_KIND_RE.match(name)
    prefixed = name.startswith(("gloo:", "nccl:", "c10d::"))
    if m:
        raw = m.group(1)
    elif prefixed:
        raw = name.split(":", 1)[1].lstrip(":")
    else:
        raw = name
    key = raw.strip().split(" ", 1)[0].lower().replace("_", "").replace("-", "")
    for suffix in ("coalesced", "intotensor", "tensor", "base"):
        key = key.replace(suffix, "")
    if key in _KIND_ALIASES:
        return _KIND_ALIASES[key]
    return "Other" if (m or prefixed) else None


def cpu_comm_kind(name: str, coll_arg: str | None) -> str | None:
    """Collective kind of a CPU collective call; ``record_param_comms`` by its ``Collective name``."""
    if name == "record_param_comms":
        return (collective_kind(coll_arg) or "Other") if coll_arg else "Other"
    return collective_kind(name)


def is_communication(name: str) -> bool:
    """True for an NCCL kernel name (``^nccl.*Kernel``, HTA's communication rule)."""
    return _COMM_RE.match(name) is not None


def is_matmul(name: str) -> bool:
    """True for a GEMM or fused-attention kernel name (module docstring)."""
    return _MATMUL_RE.search(name) is not None


def kernel_category(name: str, kind: str = "kernel") -> str:
    """``compute``, ``communication``, ``memory`` or ``other`` (HTA 0.5's rules, module docstring)."""
    if _COMM_RE.match(name):
        return "communication"
    if kind in ("memcpy", "memset") or _MEMORY_RE.match(name):
        return "memory"
    if not _NONCOMPUTE_RE.match(name):
        return "compute"
    return "other"


def short_kernel_name(name: str) -> str:
    """A kernel name without return type, namespaces in brackets, template and call arguments.

    ``void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>(...)`` ->
    ``at::native::multi_tensor_apply_kernel``; ``nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN``
    unchanged (the bracket-dropping rule of HTA's ``shorten_name``).
    """
    if "<" not in name and "(" not in name:
        return name
    out: list[str] = []
    depth = 0
    for ch in name.replace("->", ""):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = re.sub(r"(::)+", "::", "".join(out)).strip()
    return s.split(" ")[-1] if s else name
