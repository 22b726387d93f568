"""The transform op's oracle against hand-worked derivatives (no jax): jvp, vjp and grad of
sub-bodies with collectives, check_vma on and off, custom rules (3x), types and errors.

The rules (oracles/ops/transform.py) follow jax 0.10.2 docs/notebooks/shard_map.md
("Efficient transposition"): with check_vma, psum of a varying value transposes to pvary
(the cotangent itself), an invariant operand's derivative sums its copies' terms; with
check_vma=False every device's copy is its own variable and psum transposes to psum.
"""

from __future__ import annotations

import numpy as np

from oracles import predict
from oracles.prediction import ErrorKind
from programs.model import Input, Mesh, Op, Program
from tests.helpers import P, op, prog

MESH = Mesh(("i",), (2,))


def step(kind: str, *operands: int, **params: object) -> tuple[object, ...]:
    o = Op.make(kind, operands, **params)  # type: ignore[arg-type]
    return (o.kind, o.operands, o.params)


def _prog(transform: str, steps: tuple[object, ...], in_spec: object, out_spec: object, custom: str = "none",
          check_vma: bool = True, shape: tuple[int, ...] = (2,), mesh: Mesh = MESH) -> Program:
    # `shape` is the per-device block: the argument is it scaled up by the in_spec
    ent = in_spec.entries  # type: ignore[attr-defined]
    glob = tuple(n * (mesh.group_size(ent[d]) if d < len(ent) and ent[d] else 1) for d, n in enumerate(shape))
    x = Input(glob, "float32", "iota")
    t = op("transform", 0, transform=transform, custom=custom, steps=steps)
    return prog(mesh, [x], [in_spec], [t], [1], [out_spec], check_vma=check_vma)  # type: ignore[list-item]


def _out(p: Program) -> tuple[np.ndarray, frozenset[str] | None, float]:
    pred = predict(p)
    assert pred.error is None, pred.error
    o = pred.outputs[0]
    assert o.device_values is not None
    return np.asarray(o.device_values, dtype=np.float64), o.vma, o.atol


PSUM = (step("psum", 0, axes=("i",)),)


def test_vjp_of_psum_of_a_varying_value_is_the_cotangent() -> None:
    # x = [0, 1 | 2, 3] split over i; y = psum = [2, 4] on both; psum transposes to pvary:
    # the result is ct = y on each device
    v, vma, _ = _out(_prog("vjp", PSUM, P("i"), P("i")))
    np.testing.assert_allclose(v, [[2, 4], [2, 4]])
    assert vma == frozenset({"i"})  # x's type


def test_vjp_of_psum_without_check_vma_is_psum_of_the_cotangent() -> None:
    # every device's copy its own variable: d(sum_e <ct_e, y_e>)/dx_d = sum_e ct_e = 2 y
    v, _, _ = _out(_prog("vjp", PSUM, P("i"), P("i"), check_vma=False))
    np.testing.assert_allclose(v, [[4, 8], [4, 8]])


def test_grad_of_a_local_op_of_an_invariant_value() -> None:
    # x = [0, 1] replicated (invariant), y = x * x: grad of y.sum() is 2x, the same on each
    v, vma, _ = _out(_prog("grad", (step("mul", 0, 0),), P(), P()))
    np.testing.assert_allclose(v, [[0, 2], [0, 2]])
    assert vma == frozenset()
    # and its vjp with ct = y = x^2: 2x * x^2
    v, _, _ = _out(_prog("vjp", (step("mul", 0, 0),), P(), P(), shape=(4,)))
    x = np.arange(4.0)  # the same block on both devices
    np.testing.assert_allclose(v, [2 * x**3, 2 * x**3])


def test_vjp_of_an_invariant_value_made_varying_sums_the_per_device_terms() -> None:
    # x = [0, 1] invariant; y = pvary(x)^2 varies over i; the derivative of an invariant x sums the terms of
    # both devices: 2 * (2x * ct) with ct = y = x^2, i.e. 4 x^3
    steps = (step("pcast", 0, axes=("i",), to="varying"), step("mul", 1, 1))
    v, vma, _ = _out(_prog("vjp", steps, P(), P("i"), shape=(2,)))
    x = np.array([0.0, 1.0])
    np.testing.assert_allclose(v, [4 * x**3, 4 * x**3])
    assert vma == frozenset()  # x's type: invariant


def test_vjp_of_pmean_of_a_varying_value() -> None:
    # y = pmean(x) = [1, 2] invariant; ct = y; d/dx_d of <ct, y> counted once: ct / 2
    v, _, _ = _out(_prog("vjp", (step("pmean", 0, axes=("i",)),), P("i"), P("i")))
    np.testing.assert_allclose(v, [[0.5, 1], [0.5, 1]])


def test_vjp_of_all_gather_is_the_sum_of_the_cotangent_blocks() -> None:
    # y = all_gather(x, tiled) = [0, 1, 2, 3] on both (typed varying); ct = y; the result
    # on device d is the sum over devices of ct's block d: 2 x_d (psum_scatter)
    v, _, _ = _out(_prog("vjp", (step("all_gather", 0, axes=("i",), axis=0, tiled=True),), P("i"), P("i")))
    np.testing.assert_allclose(v, [[0, 2], [4, 6]])


def test_jvp_of_psum_with_tangent_half_x_plus_one() -> None:
    # t = x * 0.5 + 1 = [1, 1.5 | 2, 2.5]; jvp of psum is psum of t: [3, 4]; y's type
    v, vma, _ = _out(_prog("jvp", PSUM, P("i"), P()))
    np.testing.assert_allclose(v, [[3, 4], [3, 4]])
    assert vma == frozenset()


def test_jvp_of_a_product_with_the_operand() -> None:
    # y = (-c) * c = -c^2: tangent -2 c t; c = [0, 1 | 2, 3], t = c / 2 + 1
    steps = (step("neg", 0), step("mul", 1, 0))
    v, _, _ = _out(_prog("jvp", steps, P("i"), P("i")))
    c = np.array([[0.0, 1], [2, 3]])
    np.testing.assert_allclose(v, -2 * c * (c * 0.5 + 1))


def test_custom_rules_are_three_times_the_derivative() -> None:
    for custom, transform in (("custom_jvp", "jvp"), ("custom_jvp", "grad"), ("custom_vjp", "vjp"), ("custom_vjp", "grad")):
        out = P() if transform == "jvp" else P("i")  # (jvp: y's type; vjp and grad: x's)
        plain, _, _ = _out(_prog(transform, (step("mul", 0, 0), *PSUM), P("i"), out))
        v, _, _ = _out(_prog(transform, (step("mul", 0, 0), *PSUM), P("i"), out, custom=custom))
        assert np.any(plain)
        np.testing.assert_allclose(v, 3 * plain)


def test_two_axes_invariant_along_one() -> None:
    # mesh i=2, j=2; x split over i only (invariant along j); y = psum(x, 'i') invariant
    # along both: grad of y.sum() w.r.t. x: ones (pvary transpose), the same along j
    mesh = Mesh(("i", "j"), (2, 2))
    v, vma, _ = _out(_prog("grad", PSUM, P("i"), P("i"), mesh=mesh))
    np.testing.assert_allclose(v, np.ones((2, 2, 2)))
    assert vma == frozenset({"i"})


def test_the_jacobian_agrees_with_central_differences() -> None:
    # a quadratic chain: central differences are exact for it
    from oracles.ops import OPS
    from oracles.ops.base import Ctx
    from oracles.prediction import ValueType

    steps = (step("mul", 0, 0), step("all_gather", 1, axes=("i",), axis=0, tiled=True), step("neg", 2))
    p = _prog("vjp", steps, P("i"), P("i"))
    t = OPS["transform"]
    ctx = Ctx(p.mesh, p.manual_axes, True, 0, p.body[0])
    ins = [ValueType((2,), "float32", frozenset({"i"}))]
    sub = t._sub(ins, ctx)  # type: ignore[attr-defined]
    x = np.array([[0.5, 1.0], [2.0, -3.0]])
    j = t._jacobian(sub, t._forward(sub, x))  # type: ignore[attr-defined]
    fd = np.zeros_like(j)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = 1.0
        up, down = (t._forward(sub, x + h * e.reshape(x.shape))[-1].ravel() for h in (1.0, -1.0))  # type: ignore[attr-defined]
        fd[:, i] = (up - down) / 2
    np.testing.assert_allclose(j, fd)


def test_bfloat16_values_carry_a_tolerance() -> None:
    x = Input((2,), "bfloat16", "iota")
    p = prog(MESH, [x], [P("i")], [op("transform", 0, transform="grad", custom="none", steps=(step("mul", 0, 0), *PSUM))], [1], [P("i")])
    o = predict(p).outputs[0]
    assert o.atol > 0 and o.atol < 0.1


def test_transform_errors() -> None:
    ints = prog(MESH, [Input((2,), "int32", "iota")], [P("i")], [op("transform", 0, transform="grad", custom="none", steps=PSUM)], [1], [P("i")])
    err = predict(ints).error
    assert err is not None and err.kind == ErrorKind.TRANSFORM and err.op_index == 0
    jv = _prog("jvp", PSUM, P("i"), P(), custom="custom_vjp")
    err = predict(jv).error
    assert err is not None and err.kind == ErrorKind.TRANSFORM and "custom_vjp" in err.facts
    # a step's own check still applies: psum over an axis that is not manual
    bad = _prog("vjp", (step("psum", 0, axes=("j",)),), P("i"), P("i"))
    err = predict(bad).error
    assert err is not None and err.kind == ErrorKind.UNBOUND_AXIS


def test_product_rule_broadcasts_a_rank_0_step_per_device() -> None:
    # f(c) = sum(c) * c, c = [0, 1 | 2, 3] split over i: grad of sum(f) = sum(c)^2 per
    # device is 2 sum(c), per device (2, 10); a rank-0 step times the operand must
    # broadcast per device, not against the device dimension
    steps = (step("reduce_sum", 0, axis=0), step("mul", 1, 0))
    got, vma, _ = _out(_prog("grad", steps, P(("i",)), P(("i",))))
    assert got.shape == (2, 2) and np.allclose(got, [[2.0, 2.0], [10.0, 10.0]]), got
    assert vma == frozenset({"i"})
