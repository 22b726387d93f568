"""A program's body as Python text: each op written from its op table call template
(programs/ops.py), the form users write and `programs.source` reads back. It is the
program's repr (`Program.__repr__`) and the body of every emitted script
(programs/emit.py).

It reads the model's values only through their attributes, so it imports programs/model.py
for annotations alone and sits below it: the model can show itself as readable Python.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from programs.forms import arg_source
from programs.ops import (
    MODULE_SOURCE,
    OP_TABLE,
    WRAP_SOURCE,
    Arg,
    Call,
    present_args,
    python_value,
    transform_template,
)

if TYPE_CHECKING:
    from programs.model import Op, ParamValue, Program, Spec


def literal(v: object) -> str:
    """Python source for a value, the same in every process: a set's repr follows string
    hashing (PYTHONHASHSEED), so sets are written sorted."""
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(repr(x) for x in sorted(v, key=repr)) + "}" if v else "set()"
    return repr(v)

def axes_src(axes: ParamValue) -> str:
    """'x' for one axis, ('x', 'y') for several: the forms users write."""
    assert isinstance(axes, tuple)
    return repr(python_value("axes", axes))


def _arg_src(a: Arg, names: list[str], op: Op) -> str:
    """One template argument as source (the lowering passes the same value)."""
    if a.source == "xs":
        return ", ".join(names[v] for v in op.operands)
    if a.source in ("x0", "x1"):
        x = names[op.operands[int(a.source[1])]]
        if a.form == "send":
            return f"jax.lax.psend({x}, {axes_src(op.p('axes'))}, {literal(python_value('pairs', op.p('perm')))})"
        if a.form == "like":
            return f"jax.ShapeDtypeStruct({x}.shape, {x}.dtype)"
        return x
    if a.form == "fn":
        return f"lambda b: {op_source(op.inner_op(), ['b'])}"
    if a.form == "dtype":
        return f"jnp.{op.p(a.source)}"
    if a.form == "spec":
        return repr(op.spec_param(a.source))
    return arg_source(a, op)  # (in the form the op writes it: programs/forms.py)


def _args_src(args: tuple[Arg, ...], names: list[str], op: Op) -> list[str]:
    return [(a.keyword + "=" if a.keyword else "") + _arg_src(a, names, op) for a in present_args(args, op)]


def _call_src(call: Call, names: list[str], op: Op) -> str:
    parts = _args_src(call.args, names, op)
    if call.module == "operator":
        return f"{parts[0]} {call.symbol} {parts[1]}" if len(parts) == 2 else f"{call.symbol}{parts[0]}"
    if call.module == "method":
        return f"{parts[0]}.{call.function}({', '.join(parts[1:])})"
    return f"{MODULE_SOURCE[call.module]}.{call.function}({', '.join(parts)})"


def op_source(op: Op, names: list[str]) -> str:
    """The jax expression computing `op`, with operand names from `names`: its op table
    call template written as source (the lowering builds the same call)."""
    wrap = op.p("wrap")
    if wrap is not None:
        inner_names = list(names)
        inner_names[op.operands[0]] = "c"
        inner = op_source(replace(op, params=tuple(kv for kv in op.params if kv[0] != "wrap")), inner_names)
        return WRAP_SOURCE[str(wrap)].format(inner=inner, x=names[op.operands[0]])
    if op.kind not in OP_TABLE:
        raise ValueError(f"no source form for op kind {op.kind!r}")
    call = OP_TABLE[op.kind].call
    if call.module == "template":
        return transform_template(op).format(body=steps_source(op), x=names[op.operands[0]])
    src = _call_src(call, names, op)
    return f"{src}({', '.join(_args_src(call.then, names, op))})" if call.then else src


def steps_source(op: Op) -> str:
    """A transform's sub-body as a lambda of c: one step, `lambda c: -c`; several, each
    named by an assignment expression and the last returned:
    `lambda c: (s1 := -c, s2 := jax.lax.psum(s1, 'x'), s2 * c)[-1]`."""
    steps = op.steps()
    names = ["c"] + [f"s{i + 1}" for i in range(len(steps))]
    parts = [op_source(st, names) for st in steps]
    if len(parts) == 1:
        return f"lambda c: {parts[0]}"
    named = [f"{names[i + 1]} := {src}" for i, src in enumerate(parts[:-1])]
    return "lambda c: (" + ", ".join([*named, parts[-1]]) + ")[-1]"


def value_names(p: Program) -> list[str]:
    return [f"a{i}" for i in range(len(p.inputs))] + [f"v{i}" for i in range(len(p.body))]


def specs_src(specs: tuple[Spec, ...], form: str = "tuple") -> str:
    """The specs, one per argument / output, in the call's `form` (programs/model.py
    CallForm): a tuple, a list, or one spec for all ("single": they are equal)."""
    if form == "list":
        return "[" + ", ".join(repr(s) for s in specs) + "]"
    if form == "single" and specs:
        return repr(specs[0])
    return "(" + ", ".join(repr(s) for s in specs) + ("," if len(specs) == 1 else "") + ")"


def outer_inputs(p: Program) -> list[int]:
    """The arguments the body closes over that are values of the called function."""
    return [i for i, x in enumerate(p.inputs) if x.closure == "outer"]


EFFECT_TAG = "shardfuzz-effect"  # the first word of a jax.debug.print effect's line


def _effect_lines(p: Program, v: int, names: list[str]) -> list[str]:
    """The effects reading value `v` (programs/model.py `Effect`): a jax.debug.callback
    of `record_call(k)` or a jax.debug.print, with each manual axis' index."""
    idx = [f"jax.lax.axis_index({a!r})" for a in p.mesh.names if a in p.manual_axes]
    out = []
    for k, e in enumerate(p.effects):
        if e.value != v:
            continue
        if e.kind == "callback":
            out.append(f"jax.debug.callback(record_call({k}), {', '.join([*idx, names[v]])})")
        else:
            fmt = f"{EFFECT_TAG} {k} " + " ".join("{}" for _ in idx) + ": {}"
            out.append(f"jax.debug.print({fmt!r}, {', '.join([*idx, names[v]])})")
    return out


def body_source(p: Program, fn: str = "body", record: str = "") -> str:
    """The shard_map body as a Python function. `record`: the name of a function called,
    before the return, with every value by name (`record(a0=a0, v0=v0, ...)`), so that a
    reproducer can read `jax.typeof` of each while jax traces the body.

    It takes the arguments the shard_map is given (`Program.passed`); a NumPy constant it
    closes over is `jnp.asarray(Cn)` (programs/emit.py `closure_src`), and where it closes over values of
    the called function (`Program.inputs[i].closure == "outer"`), it is made by
    `make_body(a1, ...)` of those values (emit.py `call_src`). Each effect follows the line
    making its value."""
    names = value_names(p)
    n_in = len(p.inputs)
    args = ", ".join(names[i] for i in p.passed)
    outer = outer_inputs(p)
    pad = "  " if outer else ""
    lines = [f"def make_{fn}({', '.join(names[i] for i in outer)}):  # the values of the called function it closes over"] if outer else []
    lines.append(f"{pad}def {fn}({args}):")
    for i, x in enumerate(p.inputs):
        if x.closure == "numpy":
            lines.append(f"{pad}  {names[i]} = jnp.asarray(C{i})  # a NumPy constant")
    for i in range(n_in):
        lines += [f"{pad}  {e}" for e in _effect_lines(p, i, names)]
    for i, op in enumerate(p.body):
        lines.append(f"{pad}  {names[n_in + i]} = {op_source(op, names)}")
        lines += [f"{pad}  {e}" for e in _effect_lines(p, n_in + i, names)]
    if record:
        lines.append(f"{pad}  {record}(" + ", ".join(f"{n}={n}" for n in names) + ")")
    outs = ", ".join(names[o] for o in p.outputs)
    lines.append(f"{pad}  return {outs}" + ("," if len(p.outputs) == 1 else ""))
    if outer:
        lines.append(f"{pad}return {fn}")
    return "\n".join(lines)
