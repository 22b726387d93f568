"""Lowering a Program to real jax, from the op table's call templates.

Each op's jax call is built from its `programs.ops.OP_TABLE` entry: the module and
function are resolved with getattr on jax, jax.lax or jax.numpy (or Python's `operator`
module, or a method of the first operand), and its operands and parameters become the
positional and keyword arguments the template names. `programs/emit.py` writes the same
template as source, so the harness runs exactly what a reproducer shows.
`tests/test_op_tables.py` asserts that this table, the op table and the oracle's `OPS`
cover the same kinds.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from programs.forms import arg_value
from programs.model import Op, Program, Spec
from programs.ops import OP_TABLE, Arg, Call, present_args, python_value, transform_template

Lowered = Callable[[list[Any], Op], Any]


def _module(name: str) -> Any:
    import jax
    import jax.numpy as jnp

    return {"jax": jax, "jax.lax": jax.lax, "jax.numpy": jnp}[name]


def _arg(a: Arg, xs: list[Any], op: Op) -> list[Any]:
    """The value(s) one template argument passes (a list: "xs" passes every operand)."""
    if a.source == "xs":
        return list(xs)
    if a.source in ("x0", "x1"):
        x = xs[int(a.source[1])]
        if a.form == "send":  # the token of a psend over the op's own axes and perm
            import jax

            return [jax.lax.psend(x, python_value("axes", op.p("axes")), python_value("pairs", op.p("perm")))]
        if a.form == "like":
            import jax

            return [jax.ShapeDtypeStruct(x.shape, x.dtype)]
        return [x]
    if a.form == "fn":  # the nested shard_map's inner op, as a function of its block
        inner = op.inner_op()
        return [lambda b: lower_op(inner, [b])]
    if a.form == "dtype":
        import jax.numpy as jnp

        return [getattr(jnp, str(op.p(a.source)))]
    if a.form == "spec":
        return [to_pspec(op.spec_param(a.source))]
    return [arg_value(a, op)]  # (in the form the op writes it: programs/forms.py)


def _apply(call: Call, args: tuple[Arg, ...], fn: Any, xs: list[Any], op: Op) -> Any:
    pos: list[Any] = []
    kw: dict[str, Any] = {}
    for a in present_args(args, op):
        vals = _arg(a, xs, op)
        if a.keyword:
            kw[a.keyword] = vals[0]
        else:
            pos.extend(vals)
    if call.module == "method":
        return getattr(pos[0], call.function)(*pos[1:], **kw)
    return fn(*pos, **kw)


def lower_op(op: Op, xs: list[Any]) -> Any:
    """`op` applied to the jax values `xs` (its operands), as its template says."""
    call = OP_TABLE[op.kind].call
    if call.module == "template":
        return _transform(op, xs)
    if call.module == "method":
        fn = None
    elif call.module == "operator":
        fn = getattr(operator, call.function)
    else:
        fn = getattr(_module(call.module), call.function)
    out = _apply(call, call.args, fn, xs, op)
    return _apply(call, call.then, out, xs, op) if call.then else out


def sub_body(op: Op) -> Callable[[Any], Any]:
    """A transform's sub-body (its steps, programs/ops.py) as a function of its operand."""
    steps = op.steps()

    def f(c: Any) -> Any:
        vals = [c]
        for st in steps:
            vals.append(lower_op(st, [vals[j] for j in st.operands]))
        return vals[-1]

    return f


def _transform(op: Op, xs: list[Any]) -> Any:
    """jax.jvp / jax.vjp / jax.grad of the sub-body, plain or custom: the op table's own
    source text (programs/ops.py `transform_template`, what the reproducer shows),
    evaluated with f the lowered sub-body and x the operand."""
    import jax

    src = transform_template(op).format(body="f", x="x")
    return eval(src, {"jax": jax, "f": sub_body(op), "x": xs[0]})  # (constant text from the op table)


def wrapped(op: Op, xs: list[Any]) -> Any:
    """The op inside a wrapper of the same meaning (lax.scan, cond, switch, while_loop,
    fori_loop, map, jax.vmap, jax.checkpoint): programs/ops.py WRAP_SOURCE, the
    reproducer's form of the same calls."""
    wrap = op.p("wrap")
    if wrap is None:
        return lower_op(op, xs)
    import jax
    import jax.numpy as jnp

    def fn(c: Any) -> Any:
        return lower_op(op, [c, *xs[1:]])

    x = xs[0]
    if wrap == "scan":
        _, ys = jax.lax.scan(lambda c, _: (c, fn(c)), x, None, length=1)
        return ys[0]
    if wrap == "cond":
        return jax.lax.cond(True, fn, fn, x)
    if wrap == "switch":
        return jax.lax.switch(1, [fn, fn, fn], x)
    if wrap == "while":
        return jax.lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] + 1, s[1], fn(s[1])), (0, x, fn(x)))[2]
    if wrap == "fori":
        return jax.lax.fori_loop(0, 1, lambda i, s: (s[0], fn(s[0])), (x, fn(x)))[1]
    if wrap == "map":
        return jax.lax.map(fn, jnp.expand_dims(x, 0))[0]
    if wrap == "vmap":
        return jax.vmap(fn)(jnp.expand_dims(x, 0))[0]
    if wrap == "checkpoint":
        return jax.checkpoint(fn)(x)
    raise ValueError(f"unknown wrap {wrap!r}")


def lowering_table() -> dict[str, Lowered]:
    """Every op kind the lowering can build, each as `f(operands, op)`."""
    return {kind: (lambda a, op: lower_op(op, a)) for kind in OP_TABLE}


def to_pspec(s: Spec) -> Any:
    """A program Spec as the object shard_map receives (a P, or the deliberately wrong
    object an invalid program asks for)."""
    from jax.sharding import PartitionSpec as P

    parts = [None if e is None else (e[0] if len(e) == 1 else tuple(e)) for e in s.entries]
    if s.kind == "P":
        ur = {k: set(v) for k, v in (("unreduced", s.unreduced), ("reduced", s.reduced)) if v}
        return P(*parts, **ur)  # (unreduced= / reduced= only when set: older jax has neither)
    if s.kind == "str":
        return parts[0] if parts else ""
    if s.kind == "tuple":
        return tuple(parts)
    return None


def _as_jax_value(v: Any) -> Any:
    """What `record` reads a value's type from: a Python number (lax.axis_size returns an
    int; neg, add, psum of one stay one) as the jax scalar it stands for, so that its
    shape, dtype and (empty) varying axes read like any other value's. The body itself
    keeps the Python number, as a user's code and the reproducer do."""
    if hasattr(v, "shape"):
        return v
    import jax.numpy as jnp

    return jnp.asarray(v)


def make_body(p: Program, record: Callable[[int, Any], None] | None = None,
              closed: dict[int, Any] | None = None, emit: Callable[[int, Any], None] | None = None) -> Callable[..., Any]:
    """The shard_map body for `p`. `record(value_index, jax_value)` sees every value as it
    is made (at trace time), so modes can read `jax.typeof` of each. The body takes the
    arguments the shard_map is given (`Program.passed`) and closes over the others: a
    NumPy constant as `jnp.asarray` of it, an "outer" one as its value in `closed` (the
    called function's: harness/run/edges.py `closing`). `emit(value_index, jax_value)`
    makes the effects reading a value (`Program.effects`) right after it is made
    (harness/run/edges.py `emit`; None: the body has none)."""
    n_in = len(p.inputs)
    passed = p.passed
    effects = {e.value for e in p.effects} if emit is not None else set()

    def body(*args: Any) -> tuple[Any, ...]:
        if len(passed) == n_in:
            vals = list(args)
        else:
            import jax.numpy as jnp

            given = dict(zip(passed, args))
            vals = [given[i] if x.closure is None else jnp.asarray(x.materialize()) if x.closure == "numpy"
                    else (closed or {})[i] for i, x in enumerate(p.inputs)]
        if record is not None:
            for i, v in enumerate(vals):
                record(i, v)
        for i in range(n_in):
            if i in effects:
                emit(i, vals[i])  # type: ignore[misc]
        for i, op in enumerate(p.body):
            v = wrapped(op, [vals[j] for j in op.operands])
            vals.append(v)
            if record is not None:
                record(n_in + i, _as_jax_value(v))
            if n_in + i in effects:
                emit(n_in + i, v)  # type: ignore[misc]
        return tuple(vals[o] for o in p.outputs)

    return body

