"""The oracle's low-precision rules, hand-worked, without jax (oracles/rounding.py).

Facts measured on jax 0.10.2, XLA:CPU, 8 devices (the differential test checks them
again): psum over 8 devices of [256, 1, 1, 1, 1, 1, 1, 1] gives 264 in bfloat16 (the exact
263 rounded once: the all-reduce accumulates in float32) and 263 in float16 (exact); a
chain of bfloat16 adds under jit, ((256 + 1) + 1) + 1, gives 256 (rounded at each step).
The oracle's bound must admit both orders.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import P, iota, op, prog

from oracles import predict
from oracles.derivatives import directional_derivative
from oracles.rounding import precision, unit_roundoff
from programs.model import Input, Mesh, round_to

X8 = Mesh(("i",), (8,))
X3 = Mesh(("i",), (3,))
BF16_U = 2.0**-8


def _one(p):  # type: ignore[no-untyped-def]
    pr = predict(p)
    assert pr.error is None, pr.error
    return pr.outputs[0]


def _spike(dtype: str) -> list:  # type: ignore[type-arg]
    """[256, 1, 1, 1, 1, 1, 1, 1] over 8 devices, built from an iota (values 0..7):
    y = min(x, 1), w = (1 - y) * 256 + y; then psum(w)."""
    return [
        op("const", shape=(), dtype=dtype, value=1),  # v1
        op("min", 0, 1),  # v2 = y
        op("sub", 1, 2),  # v3 = 1 - y
        op("const", shape=(), dtype=dtype, value=256),  # v4
        op("mul", 3, 4),  # v5
        op("add", 5, 2),  # v6 = w
        op("psum", 6, axes=("i",)),  # v7
    ]


def test_unit_roundoff_per_dtype() -> None:
    assert unit_roundoff("bfloat16") == 2.0**-8 and precision("bfloat16") == 8
    assert unit_roundoff("float16") == 2.0**-11
    assert unit_roundoff("float32") == 2.0**-24
    assert unit_roundoff("int32") == 0.0
    # 2**p is the last integer in a run of exact ones: 257 does not fit bfloat16, 256 does
    assert round_to(np.array([256.0, 257.0, 259.0]), "bfloat16").tolist() == [256.0, 256.0, 260.0]


def test_bfloat16_psum_past_256_admits_both_summation_orders() -> None:
    p = prog(X8, [iota(8, dtype="bfloat16")], [P("i")], _spike("bfloat16"), [7], [P()])
    o = _one(p)
    assert o.dtype == "bfloat16"
    assert o.device_values[0].tolist() == [263.0]  # the exact sum of the numbers held
    assert not o.exact
    # 8 terms, sum of |terms| 263: n u S, with the 1% safety for double rounding
    assert o.atol == pytest.approx(1.01 * 8 * BF16_U * 263, rel=1e-6)
    # XLA:CPU's 264 (one rounding) and a left-to-right bfloat16 sum's 256 are both admitted
    assert abs(264 - 263) <= o.atol and abs(256 - 263) <= o.atol
    # ... and a wrong value off by a whole ulp of the operands' scale is not
    assert o.atol < 10


def test_float16_psum_of_the_same_is_exact() -> None:
    # 263 <= 2**11: every partial sum of these integers is an integer float16 holds
    p = prog(X8, [iota(8, dtype="float16")], [P("i")], _spike("float16"), [7], [P()])
    o = _one(p)
    assert o.exact and o.atol == 0.0 and o.device_values[0].tolist() == [263.0]


def test_bfloat16_integer_arithmetic_below_256_is_exact() -> None:
    # psum of 0..7 is 28: exact, so jax must match bit for bit
    p = prog(X8, [iota(8, dtype="bfloat16")], [P("i")], [op("psum", 0, axes=("i",))], [1], [P()])
    o = _one(p)
    assert o.exact and o.device_values[0].tolist() == [28.0]


def test_an_iota_past_256_is_rounded_when_made() -> None:
    x = Input((300,), "bfloat16", "iota").materialize()
    assert x.dtype == ml_dtypes.bfloat16
    assert float(x[257]) == 256.0 and float(x[259]) == 260.0  # round to nearest even


def test_cast_rounds_to_nearest_even_and_stays_exact() -> None:
    # int32 257 -> bfloat16 is 256; 259 -> 260 (the tie goes to the even significand);
    # a cast rounds deterministically, so a cast of an exact value is exact
    p = prog(Mesh(("i",), (1,)), [iota(300)], [P(None)], [op("cast", 0, dtype="bfloat16")], [1], [P(None)])
    o = _one(p)
    assert o.exact and o.dtype == "bfloat16"
    assert o.device_values[0][257] == 256.0 and o.device_values[0][259] == 260.0


def test_truncation_of_an_inexact_value_widens_the_integer_tolerance() -> None:
    # bfloat16 [0, 100, 200] over 3 devices: pmean is 100, but its sum (300 > 256) may
    # round by up to 1.01 * u * 300 = 1.18, so cast to int32 lies in trunc([98.8, 101.2])
    body = [op("const", shape=(), dtype="bfloat16", value=100), op("mul", 0, 1), op("pmean", 2, axes=("i",)),
            op("cast", 3, dtype="int32")]
    p = prog(X3, [iota(3, dtype="bfloat16")], [P("i")], body, [4], [P()])
    o = _one(p)
    assert o.dtype == "int32" and o.device_values[0].tolist() == [100]
    assert not o.exact and o.atol == pytest.approx(2.0)


def test_float16_overflow_predicts_no_values() -> None:
    # (0..7) * 3000 then psum over 8 devices: 84000, past float16's largest 65504
    body = [op("const", shape=(), dtype="float16", value=3), op("const", shape=(), dtype="float16", value=3000),
            op("mul", 0, 2), op("psum", 3, axes=("i",))]
    p = prog(X8, [iota(8, dtype="float16")], [P("i")], body, [4], [P()])
    o = _one(p)
    assert o.atol == float("inf")  # 84000 > 65504: shape and dtype only


def test_promotion_of_mixed_dtypes() -> None:
    mesh = Mesh(("i",), (1,))
    # bfloat16 and float16 meet at float32; an int32 and a bfloat16 give bfloat16
    p = prog(mesh, [iota(2, dtype="bfloat16"), iota(2, dtype="float16")], [P(None), P(None)], [op("add", 0, 1)], [2], [P(None)])
    assert _one(p).dtype == "float32"
    body = [op("const", shape=(), dtype="int32", value=257), op("add", 0, 1)]
    p = prog(mesh, [iota(2, dtype="bfloat16")], [P(None)], body, [2], [P(None)])
    o = _one(p)
    # 257 converts to bfloat16 as 256 (deterministically), then 256 + 0 and 256 + 1 -> 256
    assert o.dtype == "bfloat16" and o.device_values[0].tolist() == [256.0, 257.0]
    assert not o.exact and o.atol == pytest.approx(1.01 * BF16_U * 257, rel=1e-3)


def test_pmax_passes_on_the_largest_error_and_rounds_nothing() -> None:
    # pmean of bfloat16 [0, 100, 200] carries 1.01 * u * 300; pmax of it exactly that
    body = [op("const", shape=(), dtype="bfloat16", value=100), op("mul", 0, 1), op("pmean", 2, axes=("i",)),
            op("pmax", 3, axes=("i",))]
    p = prog(X3, [iota(3, dtype="bfloat16")], [P("i")], body, [3, 4], [P(), P()])
    pr = predict(p)
    assert pr.outputs[1].atol == pytest.approx(pr.outputs[0].atol)
    assert pr.outputs[0].atol == pytest.approx(1.01 * BF16_U * 300, rel=1e-6)


def test_jnp_sum_bound_in_float16() -> None:
    # reduce_sum of 0..63 (2016 <= 2048) is exact in float16; of 0..64 (2080) it is not
    for n, exact in ((64, True), (65, False)):
        p = prog(Mesh(("i",), (1,)), [iota(n, dtype="float16")], [P(None)], [op("reduce_sum", 0, axis=0)], [1], [P()])
        assert _one(p).exact is exact


def test_grad_tolerance_is_wider_in_low_precision() -> None:
    def tol(dtype: str) -> float:
        p = prog(X8, [Input((8, 2), dtype, "small", 3)], [P("i")], [op("mul", 0, 0), op("psum", 1, axes=("i",))], [2], [P()])
        d = directional_derivative(p, [0])
        assert d.smooth
        return d.tolerance

    f32, bf16, f16 = tol("float32"), tol("bfloat16"), tol("float16")
    assert bf16 > f16 > 0 and bf16 > f32 > 0


# ---------------------------------------------------------------- int8, uint8, uint32, bool
# (jax 0.10.2 measured on XLA:CPU; jnp's promotion lattice, docs "Type promotion semantics")


def _err(p):  # type: ignore[no-untyped-def]
    pr = predict(p)
    assert pr.error is not None
    return pr.error


def test_narrow_integers_wrap_in_their_own_dtype() -> None:
    X1 = Mesh(("i",), (1,))
    # int8: 100 + 100 wraps to -56; uint8 const -3 is 253 (jnp.full wraps a Python int)
    body = [op("const", shape=(), dtype="int8", value=3), op("mul", 0, 1), op("add", 2, 2)]
    p = prog(X1, [Input((2,), "int8", "iota")], [P(None)], body, [3], [P(None)])
    assert _one(p).device_values[0].tolist() == [0, 6]
    p = prog(X1, [iota(2, dtype="uint8")], [P(None)], [op("const", shape=(), dtype="uint8", value=-3), op("add", 0, 1)], [2], [P(None)])
    o = _one(p)
    assert o.dtype == "uint8" and o.device_values[0].tolist() == [253, 254] and o.exact
    # max(iota, 3) * 2 = 6, squared 36 on each of 4 devices: psum 144 wraps to 144 - 256
    body = [op("const", shape=(), dtype="int8", value=3), op("max", 0, 1), op("const", shape=(), dtype="int8", value=2),
            op("mul", 2, 3), op("mul", 4, 4), op("psum", 5, axes=("i",))]
    p = prog(Mesh(("i",), (4,)), [iota(4, dtype="int8")], [P("i")], body, [6], [P()])
    assert _one(p).device_values[0].tolist() == [36 * 4 - 256]


def test_bool_psum_is_an_int32_count_and_psum_scatter_rejects_bool() -> None:
    mesh = Mesh(("i",), (4,))
    p = prog(mesh, [iota(4, dtype="bool")], [P("i")], [op("psum", 0, axes=("i",))], [1], [P()])
    o = _one(p)
    assert o.dtype == "int32" and o.device_values[0].tolist() == [3]  # iota 0..3: False, True, True, True
    p = prog(mesh, [iota(4, 4, dtype="bool")], [P(None)], [op("psum_scatter", 0, axes=("i",), scatter_dimension=0, tiled=True)],
             [1], [P("i")])
    assert _err(p).kind.value == "dtype"
    p = prog(mesh, [iota(4, dtype="bool")], [P("i")], [op("sub", 0, 0)], [1], [P("i")])
    assert _err(p).kind.value == "dtype"
    p = prog(mesh, [iota(4, dtype="bool")], [P("i")], [op("neg", 0)], [1], [P("i")])
    assert _err(p).kind.value == "dtype"
    # add and mul of bools are or and and; pmax is any
    p = prog(mesh, [iota(4, dtype="bool")], [P("i")], [op("mul", 0, 0), op("pmax", 1, axes=("i",))], [2], [P()])
    o = _one(p)
    assert o.dtype == "bool" and o.device_values[0].tolist() == [True]


def test_float_to_narrow_integer_truncates_and_is_unpredicted_out_of_range() -> None:
    # XLA's runtime converts 300.0 -> int8 127, -3.0 -> uint8 0, -2.7 -> int8 -2; but jax
    # documents the cast as C++'s static_cast, undefined out of range, and jit's constant
    # folding of -1.0 -> uint8 gives 255: out of range, only shape and dtype are checked
    X1 = Mesh(("i",), (1,))
    body = [op("const", shape=(), dtype="float32", value=100), op("mul", 0, 1), op("cast", 2, dtype="int8"), op("cast", 2, dtype="uint8")]
    p = prog(X1, [Input((4,), "float32", "iota")], [P(None)], body, [3, 4], [P(None), P(None)])
    pr = predict(p)
    assert pr.outputs[0].device_values[0].tolist() == [0, 100, 127, 127]
    assert pr.outputs[1].device_values[0].tolist() == [0, 100, 200, 255]
    # (200 and 300 leave int8, 300 uint8): no value predicted there, the others exact
    assert pr.outputs[0].unchecked[0].tolist() == [False, False, True, True]
    assert pr.outputs[1].unchecked[0].tolist() == [False, False, False, True]
    assert all(o.exact and o.atol == 0.0 for o in pr.outputs)
    inside = prog(X1, [Input((4,), "float32", "iota", offset=-2)], [P(None)], [op("cast", 0, dtype="int8")], [1], [P(None)])
    o = predict(inside).outputs[0]
    assert o.exact and o.device_values[0].tolist() == [-2, -1, 0, 1] and o.unchecked is None
    below = prog(X1, [Input((4,), "float32", "iota", offset=-2)], [P(None)], [op("cast", 0, dtype="uint8")], [1], [P(None)])
    assert predict(below).outputs[0].unchecked[0].tolist() == [True, True, False, False]  # (-2.0 and -1.0 leave uint8)
    every = prog(X1, [Input((4,), "float32", "iota", offset=-9)], [P(None)], [op("cast", 0, dtype="uint8")], [1], [P(None)])
    o = predict(every).outputs[0]
    assert np.isinf(o.atol) and o.unchecked is None  # (-9.0 .. -6.0: no element predicted, shape and dtype only)
    # jax agrees where the value is defined, and is not held to one where it is not
    from harness.judge.check import check_program

    assert not check_program(inside, ("jit", "eager")).divergences
    assert not check_program(below, ("jit", "eager")).divergences


def test_promotion_lattice_of_the_integers() -> None:
    from oracles.ops.local import _promote

    assert _promote("int8", "uint8") == "int16"
    assert _promote("uint8", "uint32") == "uint32"
    assert _promote("int8", "uint32") == "int32"  # int64, canonicalised without x64
    assert _promote("uint32", "int32") == "int32"
    assert _promote("bool", "uint8") == "uint8" and _promote("int8", "bfloat16") == "bfloat16"


def test_reduce_sum_of_narrow_integers_widens() -> None:
    X1 = Mesh(("i",), (1,))
    for dt, want, total in (("int8", "int32", 6), ("uint8", "uint32", 6), ("bool", "int32", 3), ("uint32", "uint32", 6)):
        p = prog(X1, [iota(4, dtype=dt)], [P(None)], [op("reduce_sum", 0, axis=0)], [1], [P()])
        o = _one(p)
        assert (o.dtype, o.device_values[0].tolist()) == (want, total), dt


def test_pmean_over_a_group_not_a_power_of_two_rounds_an_integer_quotient() -> None:
    # int32 [0, 1, 2] over 3 devices: the sum 3 over 3 is the integer 1, but XLA divides
    # by multiplying with 1/3 rounded to float32, so 1 may come back an ulp off, and so
    # may anything computed from it (jax 0.10.2: (x/6)*(x/6) for x = 6 gives 1.0000001)
    p = prog(X3, [iota(3)], [P("i")], [op("pmean", 0, axes=("i",)), op("mul", 1, 1)], [1, 2], [P(), P()])
    pr = predict(p)
    assert pr.error is None, pr.error
    mean, square = pr.outputs
    assert mean.dtype == "float32" and mean.device_values[0].tolist() == [1.0]
    assert not mean.exact and mean.atol == pytest.approx(1.01 * 2 * 2.0**-24 + 1e-12)  # (1e-12: the oracle's own rounding)
    assert not square.exact and abs(1.0000001192092896 - 1.0) <= square.atol < 1e-5
    # over 4 devices 1/4 is exact: the integer quotient 12 / 4 = 3 stays exact
    X4 = Mesh(("i",), (4,))
    body = [op("const", shape=(), dtype="int32", value=2), op("mul", 0, 1), op("pmean", 2, axes=("i",))]
    q = prog(X4, [iota(4)], [P("i")], body, [3], [P()])
    o = _one(q)
    assert o.device_values[0].tolist() == [3.0] and o.exact and o.atol == 0.0
