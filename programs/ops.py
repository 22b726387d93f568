"""The op table: every op kind once, with its typed parameters, its syntax and its call.

Each `OpDesc` is the one description of an op kind in `programs/`:

- `params`: its typed parameters (`Param`: name, type from `PARAM_TYPES`, optional);
- `arity`: how many operands it reads;
- `call`: the jax call a user writes (`Call`: module, function, and how operands and
  parameters become positional and keyword arguments, as data).

Both the real jax call (`harness/run/lowering.py`, which resolves the module and function
with getattr on jax) and the reproducer's text (`programs/body_text.py` `op_source`) are
derived from `call`, so they cannot disagree. The semantics of each kind live in the
oracle (`oracles/ops/`, one class per kind) and its draw in the strategy; both rooms build
their registries from this table's kinds and fail at import on a kind they lack
(`tests/test_op_tables.py` asserts each registry equals the table). programs/ never
imports jax: a template is strings and tuples.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from programs.model import Op, ParamValue

# what a parameter's value is (validated structurally by programs/serialize.py and
# programs/validate.py)
PARAM_TYPES = {
    "axes": "a tuple of mesh axis names",
    "int": "an integer",
    "bool": "True or False",
    "dtype": "a dtype name from programs.model.DTYPES",
    "shape": "a tuple of non-negative integers",
    "scalar": "a number",
    "ints": "a tuple of integers",
    "pairs": "a tuple of (source, destination) index pairs",
    "groups": "a tuple of tuples of group indices (axis_index_groups)",
    "vary": "'varying' or 'invarying'",
    "spec": "a spec's entries (None or a tuple of axis names per dimension)",
    "kind": "an op kind of one operand",
    "params": "(name, value) pairs: the inner op's parameters",
    "wrap": "a wrapper of the same meaning: one of WRAPS (scan, cond, switch, while, fori, map, vmap, checkpoint)",
    "transform": "a derivative transform: one of TRANSFORMS (jvp, vjp, grad)",
    "custom": "how the sub-body is differentiated: one of CUSTOMS (none, custom_jvp, custom_vjp)",
    "steps": "a sub-body of one operand: (kind, operands, params) per op; value 0 is the operand, step i defines value i + 1 and reads value i first (mul: then value i or 0); the last step's value is the result",
    "forms": "(argument, form) pairs: the axes, perm or groups argument written in another form (programs/forms.py ARG_FORMS)",
}


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # a key of PARAM_TYPES
    optional: bool = False


# How a value becomes one argument of the call (`Arg.form`). The plain forms are Python
# values (`python_value`), written with repr(); "dtype" and "spec" need jax objects, which
# only the lowering makes (the emitter writes their source: jnp.float32, P('x', None)).
ARG_FORMS = ("value", "bool", "axes", "tuple", "list", "lists", "pairs", "set", "dtype", "spec", "fn", "send", "like", "steps")


@dataclass(frozen=True)
class Arg:
    """One argument: `source` is "x0", "x1" (that operand), "xs" (every operand, in order),
    "fn" (the inner op of a nested shard_map as a one-argument function) or a parameter
    name; an operand in form "send" is passed as the token of `jax.lax.psend(x, axes,
    perm)` (the op's own axes and perm), in form "like" as `jax.ShapeDtypeStruct(x.shape,
    x.dtype)`; `keyword` "" for a positional argument; `omit_none`: left out when None."""

    source: str
    keyword: str = ""
    form: str = "value"
    omit_none: bool = False


@dataclass(frozen=True)
class Call:
    """The call template. `module` is "jax", "jax.lax" or "jax.numpy" (`function` is an
    attribute of it); "operator" (`function` is the `operator` module's name for `symbol`,
    written infix for two arguments, prefix for one); or "method" (`function` is a method
    of the first argument, called with the rest); or "template" (the derivative transform:
    its source is `transform_template(op)`, with {body} the sub-body `lambda c: ...` written
    from the "steps" argument and {x} the operand). `then`: arguments the result is called
    with (jax.shard_map(f, ...)(x))."""

    module: str
    function: str
    args: tuple[Arg, ...] = ()
    symbol: str = ""
    then: tuple[Arg, ...] = ()


MODULE_SOURCE = {"jax": "jax", "jax.lax": "jax.lax", "jax.numpy": "jnp"}  # names in reproducers


@dataclass(frozen=True)
class OpDesc:
    kind: str
    arity: int  # number of operands
    params: tuple[Param, ...]
    call: Call
    local: bool = False  # names no mesh axis
    # False: XLA:CPU cannot run it (cpu_values) or even lower it (cpu_lowering), so on CPU
    # only the modes that do not need that check it (harness/run/compat.py reports the
    # others as unsupported)
    cpu_values: bool = True
    cpu_lowering: bool = True
    # the kinds one builder below makes alike ("binary", "reduction"): the strategy draws
    # every member with its family's one draw (strategies/draws.py `table_draws`)
    family: str = ""


def _x(*more: Arg) -> tuple[Arg, ...]:
    return (Arg("x0"), *more)


_AX = Arg("axes", form="axes")
_GROUPS = Arg("groups", "axis_index_groups", "lists", omit_none=True)
_AXES, _GROUPS_P = Param("axes", "axes"), Param("groups", "groups", optional=True)


def _binary(kind: str, symbol: str = "", fn: str = "") -> OpDesc:
    call = Call("operator", kind, (Arg("x0"), Arg("x1")), symbol) if symbol else Call("jax.numpy", fn, (Arg("x0"), Arg("x1")))
    return OpDesc(kind, 2, (), call, local=True, family="binary")


def _reduction(kind: str) -> OpDesc:
    return OpDesc(kind, 1, (_AXES, _GROUPS_P), Call("jax.lax", kind, _x(_AX, _GROUPS)), family="reduction")


# The only list of op kinds: everything else that names every kind is derived from it
# (`OP_KINDS`, `SYNTAX`, the lowering, emit; the oracle's `OPS`, oracles/ops/__init__.py;
# the strategy's `ALL_KINDS` and draw tables, strategies/draws.py). Its order is the order
# the strategy offers kinds in, so a row added or moved changes what a seed draws.
_TABLE = (
    # local ops
    _binary("add", "+"),
    _binary("sub", "-"),
    _binary("mul", "*"),
    _binary("max", fn="maximum"),
    _binary("min", fn="minimum"),
    OpDesc("neg", 1, (), Call("operator", "neg", _x(), "-"), local=True),
    OpDesc("reduce_sum", 1, (Param("axis", "int"),), Call("jax.numpy", "sum", _x(Arg("axis", "axis"))), local=True),
    OpDesc("transpose", 1, (Param("perm", "ints"),), Call("jax.numpy", "transpose", _x(Arg("perm", form="tuple"))), local=True),
    OpDesc("cast", 1, (Param("dtype", "dtype"),), Call("method", "astype", _x(Arg("dtype", form="dtype"))), local=True),
    OpDesc("const", 0, (Param("shape", "shape"), Param("dtype", "dtype"), Param("value", "scalar")),
           Call("jax.numpy", "full", (Arg("shape", form="tuple"), Arg("value"), Arg("dtype", form="dtype"))), local=True),
    # named-axis collectives
    _reduction("psum"),
    _reduction("pmean"),
    _reduction("pmax"),
    _reduction("pmin"),
    OpDesc("all_gather", 1, (_AXES, Param("axis", "int"), Param("tiled", "bool"), Param("to", "vary", optional=True)),
           Call("jax.lax", "all_gather", _x(_AX, Arg("axis", "axis"), Arg("tiled", "tiled"), Arg("to", "to", omit_none=True)))),
    OpDesc("psum_scatter", 1, (_AXES, Param("scatter_dimension", "int"), Param("tiled", "bool")),
           Call("jax.lax", "psum_scatter", _x(_AX, Arg("scatter_dimension", "scatter_dimension"), Arg("tiled", "tiled")))),
    OpDesc("all_to_all", 1, (_AXES, Param("split_axis", "int"), Param("concat_axis", "int"), Param("tiled", "bool")),
           Call("jax.lax", "all_to_all", _x(_AX, Arg("split_axis"), Arg("concat_axis"), Arg("tiled", "tiled")))),
    OpDesc("ppermute", 1, (_AXES, Param("perm", "pairs")), Call("jax.lax", "ppermute", _x(_AX, Arg("perm", "perm", "pairs")))),
    OpDesc("pshuffle", 1, (_AXES, Param("perm", "ints")), Call("jax.lax", "pshuffle", _x(_AX, Arg("perm", "perm", "list")))),
    OpDesc("pswapaxes", 1, (_AXES, Param("axis", "int")), Call("jax.lax", "pswapaxes", _x(_AX, Arg("axis")))),
    OpDesc("axis_index", 0, (_AXES,), Call("jax.lax", "axis_index", (_AX,))),
    # `repair`: a pcast(to='varying') a known entry's repair puts after an op jax types
    # invariant where it varies (oracles/rewrites.py vary_after); never drawn, and the
    # oracle treats it as the identity. The call is the same.
    OpDesc("pcast", 1, (_AXES, Param("to", "vary"), Param("repair", "bool", optional=True)),
           Call("jax.lax", "pcast", _x(_AX, Arg("to", "to")))),
    # operand, output, input_offsets, send_sizes, output_offsets, recv_sizes
    OpDesc("ragged_all_to_all", 6, (_AXES,), Call("jax.lax", "ragged_all_to_all", (Arg("xs"), Arg("axes", "axis_name", "axes"))),
           cpu_values=False),
    # a nested shard_map (mesh from context) over `inner_axes`, axes the outer body left
    # automatic: jax.shard_map(lambda b: <inner op>(b), in_specs=P(*in_spec),
    # out_specs=P(*out_spec), axis_names=set(inner_axes), check_vma=check_vma)(x);
    # the inner op is one op of kind `inner` with parameters `inner_params` (pairs);
    # without `in_spec`, in_specs left out (jax infers them from the operand's type)
    OpDesc("shard_map", 1,
           (Param("inner_axes", "axes"), Param("in_spec", "spec", optional=True), Param("out_spec", "spec"), Param("inner", "kind"),
            Param("inner_params", "params"), Param("check_vma", "bool")),
           Call("jax", "shard_map", (Arg("fn", form="fn"), Arg("in_spec", "in_specs", "spec", omit_none=True),
                                     Arg("out_spec", "out_specs", "spec"),
                                     Arg("inner_axes", "axis_names", "set"), Arg("check_vma", "check_vma", "bool")),
                then=(Arg("x0"),))),
    OpDesc("axis_size", 0, (_AXES,), Call("jax.lax", "axis_size", (_AX,))),
    # jax 0.10.2 registers pbroadcast's lowering for GPU only. Its axis name is always
    # passed as a tuple: given one name as a string, jax 0.10.2 checks each of its
    # characters as an axis name (NameError "unbound axis name: d" for 'data')
    OpDesc("pbroadcast", 1, (_AXES, Param("source", "int")),
           Call("jax.lax", "pbroadcast", _x(Arg("axes", form="tuple"), Arg("source"))),
           cpu_values=False, cpu_lowering=False),
    # psend then precv over the same axes and perm, as one op (a compiler token is no
    # program value): jax.lax.precv(jax.lax.psend(x, axes, perm),
    # jax.ShapeDtypeStruct(x.shape, x.dtype), axes, perm). jax 0.10.2 lowers both for
    # GPU only ("psend is currently only implemented on GPU").
    OpDesc("sendrecv", 1, (_AXES, Param("perm", "pairs")),
           Call("jax.lax", "precv", (Arg("x0", form="send"), Arg("x0", form="like"), _AX, Arg("perm", "perm", "pairs"))),
           cpu_values=False, cpu_lowering=False),
    # a derivative transform of a sub-body of one operand (`steps`: local ops and linear
    # collectives in sequence): jax.jvp / jax.vjp / jax.grad of f, f plain or wrapped as a
    # custom_jvp / custom_vjp with a known rule; the source is TRANSFORM_SOURCE[transform]
    # with f = CUSTOM_SOURCE[custom] (`transform_template`)
    OpDesc("transform", 1, (Param("transform", "transform"), Param("custom", "custom"), Param("steps", "steps")),
           Call("template", "transform", (Arg("x0"), Arg("steps", form="steps")))),
)  # fmt: skip

# Any op reading one or two operands may run inside a control-flow wrapper or a
# transformation with the same meaning. The oracle ignores it; jax must give the same
# types and values (collectives inside loop, branch, map, remat and vmap bodies, through
# their batching, transpose and partitioning rules). Each wrapper's source, with {inner}
# the op applied to c (the first operand, as the wrapper hands it in) and {x} that first
# operand (the lowering builds the same calls, harness/run/lowering.py _wrapped):
# - scan: lax.scan over a length-1 loop whose body applies the op to the carry;
# - cond: lax.cond whose two branches both apply the op;
# - switch: lax.switch (index 1 of 3) whose three branches all apply the op;
# - while / fori: a loop that runs once, its carry (x, f(x)) (a counter first for while):
#   the carry starts as the op applied once, so its shape, dtype and varying axes never
#   change; f is the op as a function of c, bound once by an outer lambda;
# - map: lax.map over a leading length-1 axis put on x (expand_dims) and taken off;
# - vmap: jax.vmap over that same leading length-1 axis (collectives inside vmap keep
#   their named axes: the batch axis is unnamed);
# - checkpoint: jax.checkpoint (remat) of the op.
WRAP_SOURCE = {
    "scan": "jax.lax.scan(lambda c, _: (c, {inner}), {x}, None, length=1)[1][0]",
    "cond": "jax.lax.cond(True, lambda c: {inner}, lambda c: {inner}, {x})",
    "switch": "jax.lax.switch(1, [lambda c: {inner}, lambda c: {inner}, lambda c: {inner}], {x})",
    "while": "(lambda f: jax.lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] + 1, s[1], f(s[1])), (0, {x}, f({x})))[2])(lambda c: {inner})",
    "fori": "(lambda f: jax.lax.fori_loop(0, 1, lambda i, s: (s[0], f(s[0])), ({x}, f({x})))[1])(lambda c: {inner})",
    "map": "jax.lax.map(lambda c: {inner}, jax.numpy.expand_dims({x}, 0))[0]",
    "vmap": "jax.vmap(lambda c: {inner})(jax.numpy.expand_dims({x}, 0))[0]",
    "checkpoint": "jax.checkpoint(lambda c: {inner})({x})",
}
WRAPS = tuple(WRAP_SOURCE)

# The derivative transforms (op kind "transform"), as the user writes them, with {f} the
# sub-body as a function of c and {x} the operand (the lowering evaluates this same text,
# harness/run/lowering.py _transform, with f the lowered sub-body; emit writes it):
# - jvp: the tangent output for the tangent x * 0.5 + 1 (x's type; not proportional to x,
#   so a jvp that returned the primal would not pass);
# - vjp: the pullback of the primal output y itself (the cotangent has y's type);
# - grad: the gradient of the sum of f's output.
TRANSFORM_SOURCE = {
    "jvp": "jax.jvp({f}, ({x},), ({x} * 0.5 + 1,))[1]",
    "vjp": "(lambda y, pb: pb(y)[0])(*jax.vjp({f}, {x}))",
    "grad": "jax.grad(lambda c: ({f})(c).sum())({x})",
}
TRANSFORMS = tuple(TRANSFORM_SOURCE)
# f itself ({body}: `lambda c: <steps>`), plain or with a custom rule whose derivative is
# KNOWN: three times the true one (custom_jvp: the tangent out is 3 * jvp(f); custom_vjp:
# fwd saves the primal input, bwd returns 3 * vjp(f, c)(ct), with the primal input's
# type, as check_vma wants)
CUSTOM_SOURCE = {
    "none": "{body}",
    "custom_jvp": "(lambda f: (lambda g: (g.defjvp(lambda p, t: (f(*p), 3 * jax.jvp(f, p, t)[1])), g)[1])(jax.custom_jvp(f)))({body})",
    "custom_vjp": "(lambda f: (lambda g: (g.defvjp(lambda c: (f(c), c), lambda c, ct: (3 * jax.vjp(f, c)[1](ct)[0],)), g)[1])(jax.custom_vjp(f)))({body})",
}
CUSTOMS = tuple(CUSTOM_SOURCE)
CUSTOM_FACTOR = 3  # the custom rules' derivative, in units of the true one
# the step kinds a transform's sub-body may hold: local ops (mul: the one nonlinearity)
# and the linear collectives (no pmax / pmin, no axis_index)
TRANSFORM_STEP_KINDS = ("neg", "reduce_sum", "transpose", "mul", "psum", "pmean", "all_gather", "psum_scatter",
                        "all_to_all", "ppermute", "pshuffle", "pswapaxes", "pcast")


def transform_template(op: Op) -> str:
    """The transform op's source with holes {body} (the sub-body, `lambda c: ...`) and {x}
    (the operand)."""
    return TRANSFORM_SOURCE[str(op.p("transform"))].format(f=CUSTOM_SOURCE[str(op.p("custom"))], x="{x}")
# how many copies of the op each wrapper's jaxpr holds (a nested shard_map emits one
# sdy.manual_computation region per copy): one per cond / switch branch, the first
# application and the loop body's for while and fori
WRAP_COPIES = {"scan": 1, "cond": 2, "switch": 3, "while": 2, "fori": 2, "map": 1, "vmap": 1, "checkpoint": 1}
_WRAP = Param("wrap", "wrap", optional=True)

OP_TABLE: dict[str, OpDesc] = {
    d.kind: replace(d, params=d.params + (_WRAP,)) if 1 <= d.arity <= 2 else d
    for d in _TABLE
}


# every kind with an axes, perm or groups argument may write it in another form than its
# plain one (programs/forms.py: an axis name as a 1-tuple or a list, a perm as an array)
_FORMS = Param("forms", "forms", optional=True)
OP_TABLE = {k: replace(d, params=d.params + (_FORMS,)) if any(a.source in ("axes", "perm", "groups") for a in d.call.args) else d
            for k, d in OP_TABLE.items()}


@dataclass(frozen=True)
class OpSyntax:
    """An op's syntax, derived from its table entry (what serialize and validate read)."""

    kind: str
    arity: int  # number of operands
    params: tuple[str, ...]  # required parameter names
    optional: tuple[str, ...] = ()


SYNTAX: dict[str, OpSyntax] = {
    d.kind: OpSyntax(
        d.kind, d.arity, tuple(p.name for p in d.params if not p.optional), tuple(p.name for p in d.params if p.optional)
    )
    for d in OP_TABLE.values()
}
OP_KINDS = tuple(OP_TABLE)  # every op kind, in the table's order
LOCAL_OPS = frozenset(d.kind for d in OP_TABLE.values() if d.local)
NESTED_INNER = ("psum", "pmax", "pmin", "all_gather", "ppermute", "neg")  # inner ops drawn
COLLECTIVES = frozenset(SYNTAX) - LOCAL_OPS
# the kinds whose parameters hold other ops (a nested shard_map's inner op, a transform's
# steps): each has a draw of its own shape (strategies/nested.py, strategies/transform.py)
COMPOUND_OPS = frozenset(d.kind for d in OP_TABLE.values() if any(p.type in ("kind", "steps") for p in d.params))
# the named-axis collectives holding no other op: drawn over axes (strategies/collectives.py)
PLAIN_COLLECTIVES = tuple(k for k in OP_KINDS if k in COLLECTIVES and k not in COMPOUND_OPS)
BINARY_OPS = tuple(k for k in OP_KINDS if OP_TABLE[k].family == "binary")
REDUCTIONS = tuple(k for k in OP_KINDS if OP_TABLE[k].family == "reduction")
NO_CPU_VALUES = frozenset(d.kind for d in OP_TABLE.values() if not d.cpu_values)
NO_CPU_LOWERING = frozenset(d.kind for d in OP_TABLE.values() if not d.cpu_lowering)


def python_value(form: str, v: ParamValue) -> object:
    """A parameter as the plain Python value the call receives (the forms that need no
    jax object): 'x' or ('x', 'y') for axes, lists where jax wants lists."""
    if form == "axes":
        assert isinstance(v, tuple)
        return v[0] if len(v) == 1 else tuple(v)
    if form == "bool":
        return bool(v)
    if v is None or form == "value":
        return v
    assert isinstance(v, tuple), (form, v)
    if form == "tuple":
        return tuple(v)
    if form == "list":
        return list(v)
    if form == "lists":
        return [list(g) for g in v]  # type: ignore[arg-type]
    if form == "pairs":
        return [tuple(pr) for pr in v]  # type: ignore[arg-type]
    if form == "set":
        return set(v)
    raise ValueError(f"form {form!r} has no plain Python value")


def present_args(args: tuple[Arg, ...], op: Op) -> tuple[Arg, ...]:
    """The arguments `op` passes: `args` without the omit_none ones whose parameter is None.
    Positional ones first, as the template lists them (the lowering and emit both use it)."""
    out = tuple(a for a in args if not (a.omit_none and op.p(a.source) is None))
    return tuple(a for a in out if not a.keyword) + tuple(a for a in out if a.keyword)
