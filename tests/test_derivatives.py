"""The grad oracle, tested without jax on hand-worked derivatives.

Collectives are linear, so <u, J v> is <u, f(v)>; psum_scatter and all_gather are each
other's transposes, so <u, all_gather(v)> = <psum_scatter(u), v> (the identity jax's
transpose rules must honour), and a product rule case checks the nonlinear path.
"""

from __future__ import annotations

import numpy as np
from helpers import P, op, prog

from oracles.derivatives import directional_derivative
from oracles.devices import assemble_global
from oracles.interpreter import trace
from programs.model import Input, Mesh
from programs.points import cotangent, grad_point, tangents

X4 = Mesh(("i",), (4,))


def f32(shape: tuple[int, ...]) -> Input:
    return Input(shape, "float32", "small", 5)


def forward(p, inputs):  # type: ignore[no-untyped-def]
    st, err = trace(p, inputs=inputs)
    assert err is None
    return [assemble_global(st.values[o], p.mesh, s.entries) for o, s in zip(p.outputs, p.out_specs)]


def test_psum_derivative_is_the_sum() -> None:
    p = prog(X4, [f32((8,))], [P("i")], [op("psum", 0, axes=("i",))], [1], [P()])
    v = tangents(p)[0]
    u = cotangent(0, (2,))
    # psum over 4 blocks of 2: out[j] = sum_k x[2k + j]; hand-worked <u, J v>
    want = float(sum(u[j] * sum(v[2 * k + j] for k in range(4)) for j in range(2)))
    d = directional_derivative(p, [0])
    assert d.smooth and abs(d.value - want) < 1e-6


def test_product_rule() -> None:
    p = prog(X4, [f32((4,))], [P("i")], [op("mul", 0, 0)], [1], [P("i")])
    x, v, u = grad_point(p)[0], tangents(p)[0], cotangent(0, (4,))
    want = float(np.sum(u * 2 * x * v))  # d(x*x) = 2 x dx
    d = directional_derivative(p, [0])
    assert d.smooth and abs(d.value - want) < 1e-6


def test_all_gather_and_psum_scatter_are_transposes() -> None:
    # all_gather (tiled) of an (8,) array split 4 ways, and psum_scatter (tiled) back
    ag = prog(X4, [f32((8,))], [P("i")], [op("all_gather", 0, axes=("i",), axis=0, tiled=True)], [1], [P("i")])
    ps = prog(X4, [f32((32,))], [P("i")], [op("psum_scatter", 0, axes=("i",), scatter_dimension=0, tiled=True)], [1], [P("i")])
    rng = np.random.default_rng(0)
    v = rng.uniform(-1, 1, 8)
    u = rng.uniform(-1, 1, 32)  # a cotangent for all_gather's global output (4 x 8, concatenated)
    (agv,) = forward(ag, [v])
    (psu,) = forward(ps, [u])
    assert agv.shape == (32,) and psu.shape == (8,)
    assert abs(float(np.dot(u, agv)) - float(np.dot(psu, v))) < 1e-9


def test_directional_derivative_of_a_linear_collective_is_its_value() -> None:
    p = prog(X4, [f32((8,))], [P("i")], [op("all_gather", 0, axes=("i",), axis=0, tiled=False)], [1], [P("i")])
    v = tangents(p)[0]
    (fv,) = forward(p, [v])
    want = float(np.vdot(cotangent(0, fv.shape), fv))
    d = directional_derivative(p, [0])
    assert d.smooth and abs(d.value - want) < 1e-6


def test_kink_near_the_point_is_reported_not_differentiated(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # max(x, 0) with x = -0.007 and v = 1: the kink at t = 0.007 lies between the two
    # step sizes (0.005 and 0.01), so the two central differences disagree
    import oracles.derivatives as d_mod

    p = prog(X4, [f32((4,))], [P("i")], [op("const", shape=(), dtype="float32", value=0), op("max", 0, 1)], [2], [P("i")])
    monkeypatch.setattr(d_mod, "grad_point", lambda q: [np.full((4,), -0.007)])
    monkeypatch.setattr(d_mod, "tangents", lambda q: [np.ones(4)])
    d_mod._directional_derivative.cache_clear()
    assert not directional_derivative(p, [0]).smooth
    # away from the kink the same program is smooth, with derivative 0
    monkeypatch.setattr(d_mod, "grad_point", lambda q: [np.full((4,), -0.5)])
    d_mod._directional_derivative.cache_clear()  # (computed once per program: the point is patched)
    d = directional_derivative(p, [0])
    assert d.smooth and abs(d.value) < 1e-9


def test_a_tie_within_the_large_step_is_not_a_smooth_point() -> None:
    """ppermute then minimum: at the grad point two elements of a minimum are within 1e-3
    of a tie along the direction. A single step of 1e-2 called the point smooth and
    predicted a derivative far outside its tolerance; now either no derivative is
    predicted or the one predicted matches a tiny step."""
    from oracles.derivatives import _g
    from programs.points import grad_point, tangents

    mesh = Mesh(("data", "model"), (2, 3))
    p = prog(mesh, [Input((1,), "float32", "small", 0), Input((1, 12, 4), "float32", "small", 0)],
             [P(None), P(None, ("data", "model"), None)],
             [op("ppermute", 1, axes=("model",), perm=((0, 2), (1, 1), (2, 0))), op("min", 2, 1)], [3], [P(("data", "model"))])
    d = directional_derivative(p, [0])
    point, v = grad_point(p), tangents(p)
    h = 1e-6
    tiny = (_g(p, point, v, h, [0]) - _g(p, point, v, -h, [0])) / (2 * h)
    assert not d.smooth or abs(d.value - tiny) <= d.tolerance


def test_no_derivative_is_predicted_where_a_value_overflows_its_dtype() -> None:
    """float16: 60000 * x overflows at the grad point (max 65504), so jax's jvp and vjp
    are inf or nan while the float64 differences stay finite (as for float16 times a
    uint32 4294967295); as for values, nothing is predicted there. In float32
    the same program has its derivative."""
    from programs.model import Input

    def program(dtype: str):  # type: ignore[no-untyped-def]
        return prog(X4, [Input((4,), dtype, "small")], [P("i")],
                    [op("const", shape=(), dtype=dtype, value=60000), op("mul", 0, 1)], [2], [P("i")])

    assert not directional_derivative(program("float16"), [0]).smooth
    d = directional_derivative(program("float32"), [0])
    assert d.smooth and d.value != 0
