"""The derivative transform op (kind "transform"): jax.jvp, jax.vjp or jax.grad of a
sub-body of one operand, plain or as a custom_jvp / custom_vjp with a known rule
(programs/ops.py TRANSFORM_SOURCE, CUSTOM_SOURCE).

The sub-body (`Op.steps`) is a chain of local ops and linear collectives, each typed and
valued by its own class in `PLAIN_OPS` (oracles/ops/registry.py). Its derivative is never asked of jax: the Jacobian J
over every device's operand elements comes from the float64 value rules, propagating a
tangent through the chain (forward mode: a linear step maps a tangent by its own value
rule, `mul` by the product rule; exact, where finite differences are exact only for
the quadratic pieces; tests/test_transform_oracle.py checks it against central
differences). Then, following jax 0.10.2 docs/notebooks/shard_map.md ("Efficient
transposition of replication-checked collectives", the check_vma / pvary sections) and
the transpose rules in jax/_src/lax/parallel.py (psum of a varying operand transposes to
pvary, pvary to psum; with check_vma=False psum transposes to psum):

- jvp, tangent t = x * 0.5 + 1: the tangent out on device d is sum_e J[d <- e] t_e.
- vjp (cotangent ct = the primal output y) and grad (ct = ones, the gradient of
  y.sum()): with X the manual axes x varies along (every manual axis when check_vma is
  off: each device's copy is its own variable) and I_y the mesh axes y does not vary
  along (automatic axes included: the body runs once along them), the result on device
  d is (1 / |I_y|) times the sum over the devices d' that equal d on X of
  sum_e J[e <- d']^T ct_e: an invariant value is one variable and one output, not one
  per device, so its copies' derivatives add up and an invariant output's cotangent is
  counted once.
- custom_jvp / custom_vjp: the rules return CUSTOM_FACTOR (3) times the true derivative.

Types: the jvp result has y's shape, dtype and varying axes; vjp and grad results have
x's. Errors (jax 0.10.2 jax/_src/api.py): grad of an integer operand ("grad requires
real- or complex-valued inputs"), jvp of one (its float tangent: "primal and tangent
arguments to jax.jvp do not match"): TypeErrors, ErrorKind.TRANSFORM, raised while
tracing, in every mode (the defect transform_integer_operand). jvp of a custom_vjp
function is predicted as the same kind (custom_vjp's documentation: forward mode "will
raise an error"), but jax raises it late: jvp binds custom_lin, whose abstract eval
passes (jax.eval_shape runs it) and whose impl raises the TypeError when the program
runs, so a result nothing uses never raises, jax.grad over it raises NotImplementedError
("Differentiation rule for 'custom_lin' not implemented") and eager shard_map garbles it
(TypeError "unhashable type: 'list'"; measured on jax 0.5.3 .. 0.12.0). The strategy
never draws it and no defect makes it.
"""

from __future__ import annotations

import numpy as np

from oracles.devices import np_dtype
from oracles.ops.base import Ctx, ErrorTerms, OpDef
from oracles.ops.local import pad_rank
from oracles.ops.registry import PLAIN_OPS
from oracles.prediction import ErrorKind, ValueType
from oracles.rounding import SAFETY, smallest_normal, unit_roundoff
from programs.model import Op, is_float
from programs.ops import CUSTOM_FACTOR

_Sub = tuple[tuple[Op, ...], list[Ctx], list[ValueType]]


def _terms(st: Op, t: ValueType, ctx: Ctx) -> int:
    """How many roundings a step (or its transpose) may make per element: a collective's
    group size (its transpose may sum over the group: all_gather's is psum_scatter, a
    pvary's a psum), a reduce_sum's length, else one; two more for mul's product rule."""
    if st.p("axes") is not None:
        return ctx.mesh.group_size(tuple(st.p("axes"))) + 1  # type: ignore[arg-type]
    if st.kind == "reduce_sum":
        return max(1, t.shape[int(st.p("axis")) % max(1, len(t.shape))] if t.shape else 1) + 1  # type: ignore[arg-type]
    return 3 if st.kind == "mul" else 1


class Transform(OpDef):
    kind = "transform"

    def _sub(self, ins: list[ValueType], ctx: Ctx) -> _Sub:
        """The steps, their contexts, and the sub-body's value types (value 0: the operand)."""
        steps = ctx.op.steps()
        types, ctxs = [ins[0]], []
        for st in steps:
            sctx = Ctx(ctx.mesh, ctx.manual, ctx.check_vma, ctx.op_index, st, ctx.rounding, ctx.x64)
            d = PLAIN_OPS[st.kind]
            sins = [types[j] for j in st.operands]
            d.check(sins, sctx)
            if ctx.check_vma:
                d.ur(sins, sctx)  # (an unreduced / reduced operand: no rule here)
            types.append(ValueType(d.shape(sins, sctx), d.dtype(sins, sctx), d.vma(sins, sctx) if ctx.check_vma else None))
            ctxs.append(sctx)
        return steps, ctxs, types

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        transform, custom, dt = ctx.op.p("transform"), ctx.op.p("custom"), ins[0].dtype
        if not is_float(dt):
            if transform == "grad":
                raise ctx.fail(ErrorKind.TRANSFORM, f"jax.grad of an operand of dtype {dt}: grad requires real- or complex-valued inputs", dt)
            if transform == "jvp":
                raise ctx.fail(ErrorKind.TRANSFORM, f"jax.jvp of an operand of dtype {dt}: its tangent (x * 0.5 + 1) is a float, "
                               "and an integer primal wants a float0 tangent", dt)
            raise NotImplementedError("vjp of an integer operand: jax gives a float0 cotangent, which no program output models")
        if transform == "jvp" and custom == "custom_vjp":
            raise ctx.fail(ErrorKind.TRANSFORM, "jax.jvp of a custom_vjp function: forward mode is not defined for it", "custom_vjp")
        self._sub(ins, ctx)

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return self._sub(ins, ctx)[2][-1].shape if ctx.op.p("transform") == "jvp" else ins[0].shape

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return self._sub(ins, ctx)[2][-1].dtype if ctx.op.p("transform") == "jvp" else ins[0].dtype

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        t = self._sub(ins, ctx)[2][-1] if ctx.op.p("transform") == "jvp" else ins[0]
        return frozenset(t.vma or ())

    # --- values -------------------------------------------------------------------------

    @staticmethod
    def _forward(sub: _Sub, x: np.ndarray, absolute: bool = False, grow: float = 0.0) -> list[np.ndarray]:
        """The sub-body's values from x. `absolute`: each step on magnitudes (mul of |a|
        and |b|, a linear step's |value| of magnitudes), grown by (1 + grow * terms):
        a bound on every value's magnitude, jax's roundings included."""
        steps, ctxs, types = sub
        vals = [x]
        for st, sctx in zip(steps, ctxs):
            sins = [types[j] for j in st.operands]
            v = PLAIN_OPS[st.kind].value([vals[j] for j in st.operands], sins, sctx).astype(np.float64)
            if absolute:
                v = np.abs(v) * (1 + grow * _terms(st, sins[0], sctx))
            vals.append(v)
        return vals

    @staticmethod
    def _tangent(sub: _Sub, vals: list[np.ndarray], t: np.ndarray, absolute: bool = False, grow: float = 0.0) -> np.ndarray:
        """The tangent out for tangent t at the values `vals` (forward mode: a linear step
        maps the tangent by its own value rule, mul by the product rule). `absolute`: on
        magnitudes, as `_forward`."""
        steps, ctxs, types = sub
        tans = [t]
        for st, sctx in zip(steps, ctxs):
            sins = [types[j] for j in st.operands]
            if st.kind == "mul":
                # (the product rule through mul's own value rule: it broadcasts a rank-0
                # operand per device, where plain numpy would align the device dimensions
                # with the other operand's local ones)
                a, b = st.operands
                m, r = len(sctx.mesh.sizes), len(types[len(tans)].shape)
                ta, tb, va, vb = (pad_rank(np.asarray(z, np.float64), m, r) for z in (tans[a], tans[b], vals[a], vals[b]))
                tv = ta * vb + va * tb
            else:
                tv = PLAIN_OPS[st.kind].value([tans[st.operands[0]]], sins, sctx).astype(np.float64)
            if absolute:
                tv = np.abs(tv) * (1 + grow * _terms(st, sins[0], sctx))
            tans.append(tv)
        return tans[-1]

    def _jacobian(self, sub: _Sub, vals: list[np.ndarray], absolute: bool = False, grow: float = 0.0) -> np.ndarray:
        """J over every device's elements: column i is the tangent out for the unit
        tangent on element i of the operand (device-vectorised layout, flattened)."""
        x = vals[0]
        cols = []
        for i in range(x.size):
            e = np.zeros(x.size)
            e[i] = 1.0
            cols.append(self._tangent(sub, vals, e.reshape(x.shape), absolute, grow).ravel())
        return np.stack(cols, axis=1) if cols else np.zeros((vals[-1].size, 0))

    def _gather(self, raw: np.ndarray, ins: list[ValueType], y: ValueType, ctx: Ctx) -> np.ndarray:
        """(1 / |I_y|) times the sum over the devices that equal d on x's varying axes
        (see the module docstring)."""
        mesh = ctx.mesh
        x_var = set(ins[0].vma or ()) if ctx.check_vma else set(ctx.manual)
        y_var = set(y.vma or ()) if ctx.check_vma else set(ctx.manual)
        x_var, y_var = x_var & set(ctx.manual), y_var & set(ctx.manual)
        dims = tuple(i for i, a in enumerate(mesh.names) if a not in x_var)
        summed = np.broadcast_to(np.sum(raw, axis=dims, keepdims=True), raw.shape) if dims else raw
        return summed / mesh.group_size(tuple(a for a in mesh.names if a not in y_var))

    def _result(self, x: np.ndarray, ex: np.ndarray, ins: list[ValueType], ctx: Ctx) -> tuple[np.ndarray, np.ndarray]:
        """(the result in float64, its error bound per element)."""
        sub = self._sub(ins, ctx)
        y = sub[2][-1]
        u = unit_roundoff(ins[0].dtype)
        grow = SAFETY * u
        vals = self._forward(sub, x)
        lo = self._forward(sub, np.abs(x), absolute=True)
        hi = self._forward(sub, np.abs(x) + ex, absolute=True, grow=grow)
        factor = CUSTOM_FACTOR if ctx.op.p("custom") != "none" else 1
        devices = ctx.mesh.size
        if ctx.op.p("transform") == "jvp":
            t = x * 0.5 + 1
            et = 0.5 * ex + grow * (0.5 * np.abs(x) + 1)  # (x * 0.5 + 1 rounds once)
            r = self._tangent(sub, vals, t)
            m_lo = self._tangent(sub, lo, np.abs(t), absolute=True)
            m_hi = self._tangent(sub, hi, np.abs(t) + et, absolute=True, grow=grow) * (1 + grow * 2)
        else:
            ct = vals[-1] if ctx.op.p("transform") == "vjp" else np.ones(vals[-1].shape)
            ect = hi[-1] - lo[-1] if ctx.op.p("transform") == "vjp" else np.zeros(ct.shape)
            j, j_lo, j_hi = (self._jacobian(sub, v, a, g) for v, a, g in ((vals, False, 0.0), (lo, True, 0.0), (hi, True, grow)))
            r = self._gather((j.T @ ct.ravel()).reshape(x.shape), ins, y, ctx)
            m_lo = self._gather((j_lo.T @ np.abs(ct).ravel()).reshape(x.shape), ins, y, ctx)
            m_hi = self._gather((j_hi.T @ (np.abs(ct) + ect).ravel()).reshape(x.shape), ins, y, ctx) * (1 + grow * (devices + 2))
        n_steps = len(sub[0]) + devices + 2
        bound = factor * np.maximum(m_hi - m_lo, 0.0) + factor * n_steps * smallest_normal(ins[0].dtype)
        return factor * r, bound

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        r, _ = self._result(xs[0].astype(np.float64), np.zeros(xs[0].shape), ins, ctx)
        return r.astype(np_dtype(self.dtype(ins, ctx)))

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """The whole bound as the propagated term (no further rounding): the sub-body and
        its derivative are polynomials in the operand (and the tangent or cotangent) whose
        coefficients the magnitude chains bound, so |jax - oracle| is at most the chain at
        |x| + err, every step grown by its roundings (and the transpose's), less the chain
        at |x| (for a polynomial with non-negative coefficients p(a + d) - p(a) bounds
        every change within d)."""
        _, bound = self._result(xs[0].astype(np.float64), np.asarray(errs[0], dtype=np.float64), ins, ctx)
        return bound, 0.0, 1
