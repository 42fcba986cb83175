"""Exact int8 dot products of a few query rows with every tool's stored codes, on onnxruntime.

The dense index stores each tool vector as 384 int8 codes and a scale (:mod:`foldgate.search.dense`).
Scoring a query against 11k tools in float32 reads a 17.5 MB matrix (one gemv: 0.4-0.9 ms on this
machine, and OpenBLAS's second thread made its p95 jump to 20+ ms under load); the codes themselves
are 4.4 MB. onnxruntime, already loaded for the encoder, has an integer matrix product
(``MatMulInteger``, MLAS's u8 x s8 kernels) that reads them at ~0.07 ms for two query rows, with the
codes packed once per catalog version. Its int32 results are exact: the query rows are kept in
[1, 127] (zero point 64), so no pair of products can saturate the 16-bit sums of the AVX2 kernel
(2 x 127 x 128 < 32,767), and :class:`Int8Dot` checks the kernel against numpy once when built.

The one-node ONNX graph is written here as protobuf bytes (a dozen fields): the ``onnx`` package is
not a dependency and is not needed for one node.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ZERO_POINT", "Int8Dot", "open_int8_dot"]

log = logging.getLogger(__name__)

# Query rows are uint8 in [1, 127] around this zero point (codes -63..63).
ZERO_POINT = 64
_UINT8, _INT8, _INT32 = 2, 3, 6
# Rows checked against numpy when a table is built (the first and last, where kernels have edges).
_CHECK_ROWS = 257


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    """A varint protobuf field."""
    return _varint(number << 3) + _varint(value)


def _text(number: int, value: str) -> bytes:
    return _field(number, value.encode("ascii"))


def _value_info(name: str, elem: int, dims: list[int | str]) -> bytes:
    """ValueInfoProto: name, then TypeProto.tensor_type (elem_type, shape of dim_value/dim_param)."""
    shape = b"".join(_field(1, _int(1, d) if isinstance(d, int) else _text(2, d)) for d in dims)
    return _text(1, name) + _field(2, _field(1, _int(1, elem) + _field(2, shape)))


def _model_bytes(codes_t: npt.NDArray[np.int8]) -> bytes:
    """ModelProto of ``y = MatMulInteger(a, b, a_zero_point)`` with ``b`` (dim x n int8) as initializer."""
    dim = int(codes_t.shape[0])
    node = _text(1, "a") + _text(1, "b") + _text(1, "za") + _text(2, "y") + _text(4, "MatMulInteger")
    tensor = b"".join(_int(1, int(d)) for d in codes_t.shape) + _int(2, _INT8) + _text(8, "b")
    tensor += _field(9, codes_t.tobytes())
    graph = _field(1, node) + _text(2, "int8dot") + _field(5, tensor)
    graph += _field(11, _value_info("a", _UINT8, ["m", dim])) + _field(11, _value_info("za", _UINT8, []))
    graph += _field(12, _value_info("y", _INT32, ["m", int(codes_t.shape[1])]))
    # IR version 8, default-domain opset 13.
    return _int(1, 8) + _field(8, _text(1, "") + _int(2, 13)) + _field(7, graph)


class Int8Dot:
    """``rows @ codes.T`` in exact int32 for uint8 query rows in [1, 127] around :data:`ZERO_POINT`."""

    def __init__(self, session: Any, count: int) -> None:
        self._session = session
        self._zero = np.array(ZERO_POINT, dtype=np.uint8)
        self.count = count

    def __call__(self, rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
        """One int32 row of dot products per query row (``len(rows) x count``)."""
        out: npt.NDArray[np.int32] = self._session.run(None, {"a": rows, "za": self._zero})[0]
        return out


def _checked(dot: Int8Dot, codes: npt.NDArray[np.int8]) -> bool:
    """Whether the kernel's products equal numpy's on the first and last rows for two probe rows."""
    rng = np.random.default_rng(0)
    probe = rng.integers(1, 128, size=(2, codes.shape[1]), dtype=np.uint8)
    probe[1] = 127  # the largest row: the saturation edge
    got = dot(probe)
    if got.shape != (2, len(codes)):
        return False
    centred = probe.astype(np.int64) - ZERO_POINT
    for part in (slice(0, _CHECK_ROWS), slice(max(0, len(codes) - _CHECK_ROWS), len(codes))):
        want = centred @ codes[part].astype(np.int64).T
        if not np.array_equal(got[:, part], want):
            return False
    return True


def open_int8_dot(codes: npt.NDArray[np.int8]) -> Int8Dot | None:
    """The integer product over ``codes`` (n x dim), or None when onnxruntime cannot run it exactly.

    Built once per catalog version (the codes transposed and packed: a few ms on 11k tools). None
    sends the caller to its float32 product: same pages, more time.
    """
    if not len(codes) or codes.ndim != 2:
        return None
    try:
        # onnxruntime is the encoder's; it loads here only for a dense index that is searched.
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3
        model = _model_bytes(np.ascontiguousarray(codes.T, dtype=np.int8))
        session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        dot = Int8Dot(session, len(codes))
        if _checked(dot, codes):
            return dot
        log.warning("onnxruntime's int8 product disagrees with numpy here; dense scoring uses float32")
    except Exception as exc:  # no onnxruntime, or an old one without MatMulInteger: float32 it is
        log.info("no int8 product (%s); dense scoring uses float32", exc)
    return None
