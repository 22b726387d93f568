"""Read a program from Python source in the emit form, with `ast` (never exec).

The form is what `programs.emit.to_python` writes, and what people write by hand:

    mesh = jax.make_mesh((2,), ('x',))          # or: devices = ...; mesh = jax.sharding.Mesh(devices, ('x',), ...)
    a0 = np.arange(8).reshape((4, 2)).astype(np.int32)   # or jax.ShapeDtypeStruct((4, 2), jnp.int32)
    def body(a0):
      v0 = -a0
      return v0,
    f = jax.shard_map(body, mesh=mesh, in_specs=(P('x'),), out_specs=(P('x'),), check_vma=True)

`in_specs`, `out_specs`, `axis_names` and `check_vma` may also be top-level assignments.
Each body line `name = <expr>` is one op of the op table (`programs/ops.py`: its call
template read backwards, so the text emit writes and the text read here cannot drift);
an operand may itself be an expression (it becomes its own op). Imports, the docstring,
the `os.environ` lines, `def inputs` and the `try:` block that runs `f` are skipped;
anything else, and anything unreadable, is a `SourceError` naming its line and column.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass, field, replace

from programs.body_text import EFFECT_TAG
from programs.errors import SourceError
from programs.forms import ARG_FORMS, form_from
from programs.model import (
    DTYPES,
    CallForm,
    Effect,
    Input,
    Mesh,
    Op,
    ParamValue,
    Place,
    Program,
    Spec,
    SpecEntry,
    freeze,
)
from programs.ops import CUSTOMS, OP_TABLE, TRANSFORMS, WRAP_SOURCE, Arg, OpDesc, transform_template
from programs.points import REMAT_POLICIES
from programs.validate import EXPLAINED_BY, validate

_MODULES = {"jax": "jax", "jax.lax": "jax.lax", "lax": "jax.lax", "jnp": "jax.numpy", "jax.numpy": "jax.numpy"}
_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _literal(node: ast.AST, what: str) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        raise SourceError(node, f"{what} must be a literal (numbers, strings, tuples, lists), got {ast.unparse(node)!r}") from None


def _dtype(node: ast.AST) -> str:
    name = _dotted(node) if not isinstance(node, ast.Constant) else str(node.value)
    short = (name or "").split(".")[-1].rstrip("_")  # (np.bool_ is bool)
    if short not in DTYPES:
        raise SourceError(node, f"dtype {ast.unparse(node)!r} is not one shardfuzz knows; use one of {', '.join('jnp.' + d for d in DTYPES)}")
    return short


def _entry(node: ast.AST) -> SpecEntry:
    v = _literal(node, "a spec entry")
    if v is None:
        return None
    if isinstance(v, str):
        return (v,)
    if isinstance(v, tuple) and all(isinstance(a, str) for a in v):
        return v
    raise SourceError(node, f"a spec entry is None, an axis name or a tuple of axis names, got {ast.unparse(node)!r}")


def spec_of(node: ast.AST) -> Spec:
    """P(...) -> a PartitionSpec; 'x', ('x', None) and None -> the wrong-kind specs the
    oracle explains (a bare string, a plain tuple, None)."""
    if isinstance(node, ast.Call) and _dotted(node.func) in ("P", "PartitionSpec", "jax.sharding.PartitionSpec"):
        ur: dict[str, tuple[str, ...]] = {}
        for k in node.keywords:
            axes = _literal(k.value, k.arg or "a keyword") if k.arg in ("unreduced", "reduced") else None
            if not isinstance(axes, (set, frozenset, tuple, list)) or not all(isinstance(a, str) for a in axes):
                raise SourceError(node, "P(...) takes only unreduced= and reduced=, each a set of mesh axis names")
            ur[str(k.arg)] = tuple(axes)
        return Spec(tuple(_entry(a) for a in node.args), "P", ur.get("unreduced", ()), ur.get("reduced", ()))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Spec(((node.value,),), "str")
    if isinstance(node, ast.Constant) and node.value is None:
        return Spec((), "none")
    if isinstance(node, ast.Tuple):
        return Spec(tuple(_entry(e) for e in node.elts), "tuple")
    raise SourceError(node, f"expected a spec such as P('x', None), got {ast.unparse(node)!r}")


def specs_of(node: ast.AST) -> tuple[Spec, ...]:
    """One spec per argument or output: a tuple (or list) of specs, or one spec."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(spec_of(e) for e in node.elts)
    return (spec_of(node),)


@dataclass
class _Body:
    """The body being read: value names and the ops so far."""

    names: dict[str, int]
    n_in: int
    ops: list[Op] = field(default_factory=list)

    def push(self, op: Op) -> int:
        self.ops.append(op)
        return self.n_in + len(self.ops) - 1


def _operand(node: ast.AST, body: _Body) -> int:
    if isinstance(node, ast.Name):
        if node.id not in body.names:
            raise SourceError(node, f"{node.id!r} is not defined yet; name an argument of body or an earlier value")
        return body.names[node.id]
    return body.push(_op(node, body))


def _desc_for_call(node: ast.Call) -> tuple[OpDesc, list[ast.AST]]:
    """The op table entry a call is written from, and its arguments (a method's receiver first)."""
    name = _dotted(node.func)
    if isinstance(node.func, ast.Attribute) and (name is None or name.rsplit(".", 1)[0] not in _MODULES):
        for d in OP_TABLE.values():
            if d.call.module == "method" and d.call.function == node.func.attr:
                return d, [node.func.value, *node.args]
    if name is not None and "." in name:
        mod, fn = name.rsplit(".", 1)
        for d in OP_TABLE.values():
            if _MODULES.get(mod) == d.call.module and d.call.function == fn and not d.call.then:
                return d, list(node.args)
    raise SourceError(node, f"{ast.unparse(node.func)!r} is not an op shardfuzz knows; write one of "
                      + ", ".join(sorted(f"{'jnp' if d.call.module == 'jax.numpy' else d.call.module}.{d.call.function}"
                                         for d in OP_TABLE.values() if d.call.module not in ("operator", "method"))))


def _param(a: Arg, node: ast.AST, body: _Body, params: dict[str, ParamValue], operands: list[int | None]) -> None:
    if a.source in ("x0", "x1") and a.form == "send":  # jax.lax.psend(X, axes, perm): X is the operand
        if not (isinstance(node, ast.Call) and _dotted(node.func) == "jax.lax.psend" and len(node.args) == 3):
            raise SourceError(node, "precv's token must be `jax.lax.psend(x, axes, perm)` with the precv's own axes and perm")
        operands[int(a.source[1])] = _operand(node.args[0], body)
        return
    if a.source in ("x0", "x1") and a.form == "like":  # jax.ShapeDtypeStruct(X.shape, X.dtype), X sent
        if not (isinstance(node, ast.Call) and _dotted(node.func) == "jax.ShapeDtypeStruct"):
            raise SourceError(node, "precv's out_shape must be `jax.ShapeDtypeStruct(x.shape, x.dtype)` of the value sent")
        return
    if a.source in ("x0", "x1"):
        operands[int(a.source[1])] = _operand(node, body)
        return
    if a.form == "dtype":
        params[a.source] = _dtype(node)
    elif a.form == "spec":
        params[a.source] = spec_of(node).entries if isinstance(node, ast.Call) else freeze(_literal(node, a.source))
    elif a.form == "fn":
        if not (isinstance(node, ast.Lambda) and len(node.args.args) == 1):
            raise SourceError(node, "the nested shard_map's function must be `lambda b: <one op of b>`")
        inner = _Body({node.args.args[0].arg: 0}, 1)
        op = _op(node.body, inner)
        if inner.ops:
            raise SourceError(node.body, "a nested shard_map holds exactly one op, reading its one argument by name")
        params["inner"], params["inner_params"] = op.kind, op.params
    elif a.form == "set":
        v = _literal(node, a.source)
        params[a.source] = tuple(sorted(v)) if isinstance(v, (set, frozenset)) else freeze(v)  # type: ignore[arg-type]
    else:
        # (an axes, perm or groups argument in another form than its plain one, a NumPy
        # array included, is recorded in the op's `forms`: programs/forms.py)
        array = isinstance(node, ast.Call) and _dotted(node.func) in ("np.array", "numpy.array") and len(node.args) == 1
        v = _literal(node.args[0] if array else node, a.source)  # type: ignore[attr-defined]
        params[a.source] = (v,) if a.source == "axes" and isinstance(v, str) else freeze(v)
        form = form_from(a, v, array) if a.source in ARG_FORMS else None
        if form is not None:
            params["forms"] = tuple(sorted({**dict(params.get("forms") or ()), a.source: form}.items()))  # type: ignore[arg-type, misc]


def _from_template(d: OpDesc, args: list[ast.AST], keywords: list[ast.keyword], node: ast.AST, body: _Body,
                   then: list[ast.AST] = ()) -> Op:  # type: ignore[assignment]
    params: dict[str, ParamValue] = {}
    operands: list[int | None] = [None] * d.arity
    positional = [a for a in d.call.args if not a.keyword]
    by_keyword = {a.keyword: a for a in d.call.args if a.keyword}
    by_keyword.update({a.source: a for a in positional if a.source not in ("x0", "x1", "xs", "fn")})
    if positional and positional[0].source == "xs":
        if len(args) != d.arity:
            raise SourceError(node, f"{d.kind} takes {d.arity} operands, got {len(args)}")
        operands = [_operand(x, body) for x in args]
    else:
        if len(args) > len(positional):
            raise SourceError(node, f"{d.kind} takes {len(positional)} positional arguments, got {len(args)}")
        for a, x in zip(positional, args):
            _param(a, x, body, params, operands)
    for kw in keywords:
        if kw.arg not in by_keyword:
            raise SourceError(kw.value, f"{d.kind} has no argument {kw.arg!r}; it takes {', '.join(sorted(k for k in by_keyword if k))}")
        _param(by_keyword[kw.arg], kw.value, body, params, operands)  # type: ignore[index]
    for a, x in zip(d.call.then, then):
        _param(a, x, body, params, operands)
    params = {k: v for k, v in params.items() if v is not None}  # None is an absent parameter
    if any(o is None for o in operands):
        raise SourceError(node, f"{d.kind} needs {d.arity} operand(s)")
    missing = [p.name for p in d.params if not p.optional and p.name not in params]
    if missing:
        raise SourceError(node, f"{d.kind} is missing {', '.join(missing)}")
    return Op.make(d.kind, tuple(o for o in operands if o is not None), **params)


def _wrapped(node: ast.AST, body: _Body) -> Op | None:
    """jax.lax.scan(lambda c, _: (c, <op of c>), x, None, length=1)[1][0] and
    jax.lax.cond(True, lambda c: <op>, lambda c: <op>, x): the op with wrap=scan/cond."""
    call, wrap, lam = None, None, None
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Call)
            and _dotted(node.value.value.func) in ("jax.lax.scan", "lax.scan")):
        call, wrap = node.value.value, "scan"
        if len(call.args) >= 2 and isinstance(call.args[0], ast.Lambda) and isinstance(call.args[0].body, ast.Tuple):
            lam = call.args[0]
            inner_node = call.args[0].body.elts[1]
    elif isinstance(node, ast.Call) and _dotted(node.func) in ("jax.lax.cond", "lax.cond") and len(node.args) == 4:
        call, wrap = node, "cond"
        if isinstance(node.args[1], ast.Lambda):
            lam = node.args[1]
            inner_node = node.args[1].body
    if call is None:
        return None
    if lam is None or not lam.args.args:
        raise SourceError(node, f"a {wrap} wrapper is written as {WRAP_SOURCE[str(wrap)]!r}")
    x = _operand(call.args[1] if wrap == "scan" else call.args[3], body)
    carry = lam.args.args[0].arg
    inner = _Body({**body.names, carry: x}, body.n_in, body.ops)
    op = _op(inner_node, inner)
    if op.operands[:1] != (x,):
        raise SourceError(inner_node, f"the op inside {wrap} must read the carry {carry!r} first")
    return Op.make(op.kind, op.operands, **op.param_dict, wrap=wrap)


_HOLES = ("__INNER__", "__X__")


@functools.cache
def _wrap_template(wrap: str) -> ast.AST:
    return ast.parse(WRAP_SOURCE[wrap].format(inner=_HOLES[0], x=_HOLES[1]), mode="eval").body


def _match(t: object, n: object, holes: dict[str, list[ast.AST]]) -> bool:
    """Whether `n` has the shape of the template `t`, a hole (a Name __INNER__ or __X__)
    matching any expression (collected in `holes`)."""
    if isinstance(t, ast.Name) and (t.id in _HOLES or t.id == _BODY_HOLE):
        holes.setdefault(t.id, []).append(n)  # type: ignore[arg-type]
        return isinstance(n, ast.expr)
    if isinstance(t, list):
        return isinstance(n, list) and len(t) == len(n) and all(_match(a, b, holes) for a, b in zip(t, n))
    if isinstance(t, ast.AST):
        return type(t) is type(n) and all(
            _match(getattr(t, f), getattr(n, f, None), holes) for f in t._fields if f not in ("ctx", "type_comment", "kind"))
    return t == n


def _templated(node: ast.AST, body: _Body) -> Op | None:
    """The wrappers written from their WRAP_SOURCE template (switch, while, fori, map,
    vmap, checkpoint): the node has the template's shape, every copy of the op the same
    text, reading the lambda's `c` first; x is the wrapper's operand."""
    for wrap in WRAP_SOURCE:
        if wrap in ("scan", "cond"):
            continue
        holes: dict[str, list[ast.AST]] = {}
        if not _match(_wrap_template(wrap), node, holes):
            continue
        inners, xs = holes[_HOLES[0]], holes[_HOLES[1]]
        if len({ast.unparse(i) for i in inners}) != 1 or len({ast.unparse(x) for x in xs}) != 1:
            raise SourceError(node, f"every copy of the op and of its operand inside {wrap} must be the same: {WRAP_SOURCE[wrap]!r}")
        x = _operand(xs[0], body)
        inner = _Body({**body.names, "c": x}, body.n_in, body.ops)
        op = _op(inners[0], inner)
        if op.operands[:1] != (x,):
            raise SourceError(inners[0], f"the op inside {wrap} must read the carry 'c' first")
        return Op.make(op.kind, op.operands, **op.param_dict, wrap=wrap)
    return None


_BODY_HOLE = "__BODY__"


@functools.cache
def _transform_template(transform: str, custom: str) -> ast.AST:
    op = Op.make("transform", (0,), transform=transform, custom=custom, steps=())
    return ast.parse(transform_template(op).format(body=_BODY_HOLE, x=_HOLES[1]), mode="eval").body


def _steps(lam: ast.AST) -> tuple[ParamValue, ...]:
    """A transform's sub-body, `lambda c: <op of c>` or `lambda c: (s1 := <op of c>, ...,
    <op>)[-1]` (programs.emit.steps_source), as its steps: each op read like a body line,
    value 0 the lambda's argument."""
    if not (isinstance(lam, ast.Lambda) and len(lam.args.args) == 1):
        raise SourceError(lam, "a transform's function must be `lambda c: <ops of c>`")
    sub = _Body({lam.args.args[0].arg: 0}, 1)
    node = lam.body
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Tuple)
            and isinstance(node.slice, ast.UnaryOp) and ast.unparse(node.slice) == "-1"):
        elts = node.value.elts
    else:
        elts = [node]
    for i, e in enumerate(elts):
        named = isinstance(e, ast.NamedExpr)
        if named != (i < len(elts) - 1):
            raise SourceError(e, "a transform's steps are `(s1 := <op>, ..., <last op>)[-1]`: every step but the last named")
        v = sub.push(_op(e.value if isinstance(e, ast.NamedExpr) else e, sub))
        if isinstance(e, ast.NamedExpr):
            sub.names[e.target.id] = v
    return tuple((o.kind, o.operands, o.params) for o in sub.ops)  # type: ignore[misc]


def _transformed(node: ast.AST, body: _Body) -> Op | None:
    """jax.jvp / jax.vjp / jax.grad of a sub-body, plain or custom, written from the op
    table's template (programs/ops.py TRANSFORM_SOURCE, CUSTOM_SOURCE)."""
    for transform in TRANSFORMS:
        for custom in CUSTOMS:
            holes: dict[str, list[ast.AST]] = {}
            if not _match(_transform_template(transform, custom), node, holes) or not isinstance(holes[_BODY_HOLE][0], ast.Lambda):
                continue  # (the plain form's f matches a custom rule's whole text: not a lambda)
            xs = holes[_HOLES[1]]
            if len({ast.unparse(x) for x in xs}) != 1:
                raise SourceError(node, f"every copy of the operand of jax.{transform} must be the same")
            x = _operand(xs[0], body)
            return Op.make("transform", (x,), transform=transform, custom=custom, steps=_steps(holes[_BODY_HOLE][0]))
    return None


def _op(node: ast.AST, body: _Body) -> Op:
    w = _transformed(node, body)
    if w is not None:
        return w
    w = _wrapped(node, body)
    if w is not None:
        return w
    w = _templated(node, body)
    if w is not None:
        return w
    if isinstance(node, ast.BinOp) and type(node.op) in _SYMBOLS:
        sym = _SYMBOLS[type(node.op)]
        d = next(d for d in OP_TABLE.values() if d.call.module == "operator" and d.call.symbol == sym and d.arity == 2)
        return Op.make(d.kind, (_operand(node.left, body), _operand(node.right, body)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return Op.make("neg", (_operand(node.operand, body),))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and _dotted(node.func.func) in ("jax.shard_map", "shard_map"):
        return _from_template(OP_TABLE["shard_map"], list(node.func.args), node.func.keywords, node, body, list(node.args))
    if isinstance(node, ast.Call):
        d, args = _desc_for_call(node)
        return _from_template(d, args, node.keywords, node, body)
    raise SourceError(node, f"cannot read {ast.unparse(node)!r} as an op; write one op per line, e.g. v0 = jax.lax.psum(a0, 'x')")


def _input(node: ast.AST) -> Input:
    """np.arange(n).reshape(s).astype(np.T) (iota), np.random.default_rng(seed).integers(-3,
    4, size=n).reshape(s).astype(np.T) (small), or jax.ShapeDtypeStruct(s, jnp.T) (iota)."""
    if isinstance(node, ast.Call) and _dotted(node.func) in ("jax.ShapeDtypeStruct", "ShapeDtypeStruct") and len(node.args) == 2:
        shape = _literal(node.args[0], "a shape")
        if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape):
            raise SourceError(node.args[0], "a shape is a tuple of integers")
        return Input(shape, _dtype(node.args[1]), "iota")
    try:
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "astype"
        dtype = _dtype(node.args[0])
        rs = node.func.value
        assert isinstance(rs, ast.Call) and isinstance(rs.func, ast.Attribute) and rs.func.attr == "reshape"
        shape = _literal(rs.args[0], "a shape") if len(rs.args) == 1 else tuple(_literal(a, "a shape") for a in rs.args)
        shape = (shape,) if isinstance(shape, int) else shape
        src, offset = rs.func.value, 0
        if isinstance(src, ast.BinOp) and isinstance(src.op, ast.Add):  # (np.arange(N) + OFFSET)
            offset_v = _literal(src.right, "an offset")
            assert isinstance(offset_v, int) and not isinstance(offset_v, bool)
            src, offset = src.left, offset_v
            assert isinstance(src, ast.Call) and _dotted(src.func) == "np.arange"
        assert isinstance(src, ast.Call)
        if _dotted(src.func) == "np.arange":
            fill, seed = "iota", 0
        else:
            assert isinstance(src.func, ast.Attribute) and src.func.attr == "integers"
            rng = src.func.value
            assert isinstance(rng, ast.Call) and _dotted(rng.func) == "np.random.default_rng"
            seed_v = _literal(rng.args[0], "a seed")
            assert isinstance(seed_v, int) and [ast.literal_eval(a) for a in src.args] == [-3, 4]
            fill, seed = "small", seed_v
    except (AssertionError, IndexError, ValueError):
        raise SourceError(node, "an argument is np.arange(N).reshape(SHAPE).astype(np.DTYPE) "
                          "(or (np.arange(N) + OFFSET).reshape(SHAPE).astype(np.DTYPE)), "
                          "np.random.default_rng(SEED).integers(-3, 4, size=N).reshape(SHAPE).astype(np.DTYPE) "
                          "or jax.ShapeDtypeStruct(SHAPE, jnp.DTYPE)") from None
    assert isinstance(shape, tuple)
    return Input(tuple(int(n) for n in shape), dtype, fill, int(seed), offset)  # type: ignore[arg-type]


def _axis_types(node: ast.AST | None, n: int) -> tuple[str, ...]:
    if node is None:
        return ("auto",) * n
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    out = []
    for e in elts:
        name = (_dotted(e) or "").split(".")[-1].lower()
        if name not in ("auto", "explicit"):
            raise SourceError(e, "an axis type is AxisType.Auto or AxisType.Explicit")
        out.append(name)
    return tuple(out)


def _mesh(node: ast.AST, devices: tuple[int, ...] | None) -> Mesh:
    if not isinstance(node, ast.Call):
        raise SourceError(node, "mesh = jax.make_mesh(SIZES, NAMES) or jax.sharding.Mesh(devices, NAMES)")
    fn = _dotted(node.func)
    kw = {k.arg: k.value for k in node.keywords}
    if fn in ("jax.make_mesh", "make_mesh") and len(node.args) >= 2:
        sizes, names = _literal(node.args[0], "mesh sizes"), _literal(node.args[1], "mesh axis names")
    elif fn in ("jax.sharding.Mesh", "Mesh") and len(node.args) >= 2:
        if devices is None:
            raise SourceError(node, "define devices = np.array(jax.devices()[:N]).reshape(SIZES) before the mesh")
        sizes, names = devices, _literal(node.args[1], "mesh axis names")
    else:
        raise SourceError(node, "mesh = jax.make_mesh(SIZES, NAMES) or jax.sharding.Mesh(devices, NAMES)")
    names = (names,) if isinstance(names, str) else names
    sizes = (sizes,) if isinstance(sizes, int) else sizes
    if not (isinstance(names, tuple) and isinstance(sizes, tuple) and len(names) == len(sizes)
            and all(isinstance(a, str) for a in names) and all(isinstance(s, int) for s in sizes)):
        raise SourceError(node, "the mesh needs a tuple of axis names and a tuple of sizes of the same length")
    types = _axis_types(kw.get("axis_types"), len(names))
    if len(types) != len(names):
        raise SourceError(node, "give one axis type per mesh axis")
    return Mesh(names, sizes, types)  # type: ignore[arg-type]


def _devices(node: ast.AST) -> tuple[int, ...]:
    """np.array(jax.devices()[:N]).reshape(SIZES)"""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reshape" and node.args:
        v = _literal(node.args[0], "the device grid's shape") if len(node.args) == 1 else tuple(_literal(a, "a size") for a in node.args)
        v = (v,) if isinstance(v, int) else v
        if isinstance(v, tuple) and all(isinstance(n, int) for n in v):
            return v
    raise SourceError(node, "devices = np.array(jax.devices()[:N]).reshape(SIZES)")


def _skipped(st: ast.stmt, i: int) -> bool:
    if isinstance(st, (ast.Import, ast.ImportFrom, ast.Try)):
        return True
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str) and i == 0:
        return True  # the docstring
    text = ast.unparse(st)
    if text.startswith(("os.environ", "jax.config.update")):
        return True
    if text.startswith("jax.set_mesh("):
        return True  # the mesh context (programs.emit.context_src): implied by the mesh and the call
    if isinstance(st, ast.If) and ast.unparse(st.test) == "hasattr(jax, 'shard_map')":
        return True  # the emitted jax.experimental.shard_map fallback (programs.emit.SHARD_MAP_SHIM)
    if isinstance(st, ast.If) and ast.unparse(st.test) == "hasattr(jax.config, 'jax_raise_on_ppermute_sort_diff')":
        return True  # the emitted permute-order flag (programs.emit.permute_guard)
    return isinstance(st, ast.FunctionDef) and st.name == "inputs"


@dataclass
class _Edges:
    """What the source says of how the program meets its shard_map (programs/model.py
    `Place`, `CLOSURES`, `Effect`, `Program.donate`), by argument name."""

    places: dict[str, Place] = field(default_factory=dict)
    closures: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)  # argument -> the NumPy constant C<i> it is
    effects: dict[int, tuple[str, ast.AST]] = field(default_factory=dict)  # effect index -> (kind, the value read)
    donate: tuple[int, ...] = ()


def _placement(node: ast.AST, name: str) -> tuple[str, Spec] | None:
    """`jax.device_put(a, jax.sharding.NamedSharding(mesh, P(...)))` or
    `jax.sharding.reshard(a, ...)` of `name` (the spec `P(...) if batched else P(...)`:
    the second); None for anything else."""
    if not (isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == name):
        return None
    how = {"jax.device_put": "device_put", "jax.sharding.reshard": "reshard"}.get(_dotted(node.func) or "")
    ns = node.args[1]
    if how is None or not (isinstance(ns, ast.Call) and _dotted(ns.func) in ("jax.sharding.NamedSharding", "NamedSharding")
                           and len(ns.args) == 2):
        return None
    spec = ns.args[1].orelse if isinstance(ns.args[1], ast.IfExp) else ns.args[1]
    return how, spec_of(spec)


def _assigned(st: ast.stmt) -> tuple[str, ast.AST] | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id, st.value
    return None


def _read_place(fn: ast.FunctionDef, edges: _Edges) -> None:
    """`def place(a0, ...)` (programs.emit.place_src): committed arguments, Python scalars."""
    for st in fn.body:
        got = _assigned(st)
        if got is None:
            continue
        name, v = got
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "item" and ast.unparse(v.func.value) == name:
            edges.places[name] = Place("scalar")
        elif (pl := _placement(v, name)) is not None and pl[0] == "device_put":
            edges.places[name] = Place("committed", pl[1])


def _read_called(fn: ast.FunctionDef, edges: _Edges) -> tuple[ast.Call, list[str], str | None]:
    """`def f(a0, ...)` (programs.emit._called_src): the arguments placed inside it, those
    its body closes over, then `return shard_map(body, ...)(a0, ...)`. Returns the
    shard_map call, the arguments it is given and the body factory's name, if any."""
    for st in fn.body:
        got = _assigned(st)
        if got is not None:
            name, v = got
            if (pl := _placement(v, name)) is not None:
                edges.places[name] = Place(pl[0], pl[1])
                continue
            if isinstance(v, ast.Call) and _dotted(v.func) in ("jnp.asarray", "jax.numpy.asarray") and ast.unparse(v) == f"jnp.asarray({name})":
                edges.closures[name] = "outer"
                continue
        if isinstance(st, ast.Return) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Call) \
                and _dotted(st.value.func.func) in ("jax.shard_map", "shard_map"):
            sm = st.value.func
            passed = [a.id for a in st.value.args if isinstance(a, ast.Name)]
            made = sm.args[0] if sm.args else None
            if isinstance(made, ast.Call) and _dotted(made.func) == "jax.checkpoint" and made.args:
                made = made.args[0]
            factory = _dotted(made.func) if isinstance(made, ast.Call) else None
            return sm, passed, factory
        raise SourceError(st, f"`def {fn.name}` places arguments (jax.device_put / jax.sharding.reshard), closes over "
                          "them (a = jnp.asarray(a)) and returns shard_map(body, ...)(a0, ...)")
    raise SourceError(fn, f"`def {fn.name}` must return shard_map(body, ...)(a0, ...)")


def _effect(st: ast.stmt, body: _Body, edges: _Edges) -> bool:
    """A body line `jax.debug.callback(record_call(k), ..., v)` or
    `jax.debug.print('shardfuzz-effect k ...', ..., v)`: effect k reads v."""
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and st.value.args):
        return False
    call, fn = st.value, _dotted(st.value.func)
    first = call.args[0]
    if fn == "jax.debug.callback" and isinstance(first, ast.Call) and _dotted(first.func) == "record_call" and first.args:
        k, kind = _literal(first.args[0], "an effect's index"), "callback"
    elif fn == "jax.debug.print" and isinstance(first, ast.Constant) and isinstance(first.value, str) \
            and first.value.startswith(EFFECT_TAG + " "):
        k, kind = int(first.value.split()[1]), "print"
    else:
        return False
    if not isinstance(k, int) or k in edges.effects:
        raise SourceError(st, "each effect has its own index")
    edges.effects[k] = (kind, call.args[-1])
    _operand(call.args[-1], body)  # (the value it reads must be defined)
    return True


def _body_fn(fn: ast.FunctionDef, values: dict[str, Input], edges: _Edges | None = None,
             every: list[str] | None = None) -> tuple[list[str], list[Op], tuple[int, ...], dict[int, int]]:
    """The body's arguments (`every`: all the called function's, those it closes over
    too), ops, outputs and effects (effect index -> the value it reads)."""
    edges = edges or _Edges()
    params = [a.arg for a in fn.args.args]
    args = every if every is not None else params
    for a in args:
        if a not in values:
            raise SourceError(fn, f"argument {a!r} of {fn.name} has no value: write {a} = np.arange(8).reshape((4, 2)).astype(np.int32) "
                              "(or jax.ShapeDtypeStruct((4, 2), jnp.int32)) before it")
    body = _Body({a: i for i, a in enumerate(args)}, len(args))
    outputs: tuple[int, ...] | None = None
    for st in fn.body:
        if outputs is not None:
            raise SourceError(st, "nothing may follow the return")
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            continue
        if _effect(st, body, edges):
            continue
        got = _assigned(st)
        if got is not None and got[0] in args and isinstance(got[1], ast.Call) and _dotted(got[1].func) == "jnp.asarray" \
                and len(got[1].args) == 1 and isinstance(got[1].args[0], ast.Name) and got[1].args[0].id in values:
            edges.closures[got[0]] = "numpy"  # programs.emit.body_source: a NumPy constant the body closes over
            edges.constants[got[0]] = got[1].args[0].id
            continue
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            body.names[st.targets[0].id] = body.push(_op(st.value, body))
        elif isinstance(st, ast.Return) and st.value is not None:
            elts = st.value.elts if isinstance(st.value, ast.Tuple) else [st.value]
            outputs = tuple(_operand(e, body) for e in elts)
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and ast.unparse(st.value.func) == "record":
            continue  # a reproducer's record(...) of every value
        else:
            raise SourceError(st, "a body line is `name = <op>` or `return name, ...`")
    if outputs is None:
        raise SourceError(fn, f"{fn.name} must end with `return value, ...`")
    effects = {k: _operand(v, body) for k, (_, v) in edges.effects.items()}
    return args, body.ops, outputs, effects


def _wrap_of(w: ast.Call, fns: dict[str, ast.FunctionDef], outer: Mesh) -> tuple[Mesh, _Call | None, bool, str, tuple[str, ...], tuple[Spec, ...]]:
    """`f = jax.sharding.auto_axes(call, axes=..., out_sharding=...)` (or explicit_axes
    with in_sharding=): the mesh inside (the wrapped axes retyped), the shard_map call
    and reshard read from `def call`, the wrapper, its axes and specs."""
    kind = str(_dotted(w.func)).rsplit(".", 1)[1]
    if not (w.args and isinstance(w.args[0], ast.Name) and w.args[0].id in fns):
        raise SourceError(w, f"jax.sharding.{kind} wraps a `def call(...)` that makes the shard_map")
    kws = {k.arg: k.value for k in w.keywords}
    spec_kw = "out_sharding" if kind == "auto_axes" else "in_sharding"
    if "axes" not in kws or spec_kw not in kws:
        raise SourceError(w, f"jax.sharding.{kind} needs axes= and {spec_kw}= (a tuple of PartitionSpecs)")
    axes = _literal(kws["axes"], "axes")
    axes = (axes,) if isinstance(axes, str) else tuple(axes)  # type: ignore[arg-type]
    inner = "auto" if kind == "auto_axes" else "explicit"
    mesh = Mesh(outer.names, outer.sizes, tuple(inner if a in axes else t for a, t in zip(outer.names, outer.axis_types)))
    call, reshard = None, False
    for st in fns[w.args[0].id].body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            v = st.value
            if _shard_map_call(v) is not None:
                call = _shard_map_call(v)
            elif isinstance(v, ast.Name) and st.targets[0].id == f"_{v.id}_shard_map":
                reshard = True
    return mesh, call, reshard, kind, axes, specs_of(kws[spec_kw])


_SHARD_MAP = ("jax.shard_map", "shard_map")


@dataclass(frozen=True)
class _Call:
    """A shard_map call as written: its keywords, the body function's name node, the
    style (programs/model.py CALL_STYLES)."""

    keywords: list[ast.keyword]
    fn: ast.AST | None
    style: str
    node: ast.Call


def _shard_map_call(v: ast.AST) -> _Call | None:
    """`shard_map(body, ...)`, `shard_map(...)(body)` or `partial(shard_map, ...)(body)`."""
    if not isinstance(v, ast.Call):
        return None
    if _dotted(v.func) in _SHARD_MAP:
        return _Call(list(v.keywords), v.args[0] if v.args else None, "call", v)
    inner = v.func
    if isinstance(inner, ast.Call) and _dotted(inner.func) in _SHARD_MAP and not inner.args:
        return _Call(list(inner.keywords), v.args[0] if v.args else None, "decorator", inner)
    if (isinstance(inner, ast.Call) and _dotted(inner.func) in ("partial", "functools.partial") and inner.args
            and _dotted(inner.args[0]) in _SHARD_MAP):
        return _Call(list(inner.keywords), v.args[0] if v.args else None, "partial", inner)
    return None


def _form_specs(node: ast.AST, n: int) -> tuple[tuple[Spec, ...], str]:
    """One spec per argument / output (`n` of them) and the form they are written in:
    a tuple, a list, or one P(...) for all ("single")."""
    if isinstance(node, ast.List):
        return specs_of(node), "list"
    if isinstance(node, ast.Call):
        return (spec_of(node),) * n, "single"
    return specs_of(node), "tuple"


def _resharded_specs(fn: ast.FunctionDef | None, n: int) -> tuple[Spec, ...]:
    """The specs `def f` (programs.emit.reshard_src) reshards the `n` arguments to: with
    in_specs left out, what jax infers them to be."""
    ret = fn.body[-1] if fn is not None and fn.body else None
    call = ret.value if isinstance(ret, ast.Return) else None
    args = call.args if isinstance(call, ast.Call) else []
    if len(args) != n or not all(isinstance(a, ast.Call) and _dotted(a.func) == "jax.sharding.reshard" and len(a.args) == 2 for a in args):
        raise SourceError(fn, f"with in_specs left out, `def f` reshards each of the {n} arguments: "
                          "return _f_shard_map(jax.sharding.reshard(a0, P(...)), ...)")
    return tuple(spec_of(a.args[1]) for a in args)  # type: ignore[attr-defined]


def _remat_policy(node: ast.AST) -> str:
    """`jax.checkpoint_policies.<name>`: one of programs/points.py REMAT_POLICIES."""
    name = _dotted(node) or ""
    short = name.rsplit(".", 1)[-1]
    if not name.startswith("jax.checkpoint_policies.") or short not in REMAT_POLICIES:
        raise SourceError(node, f"REMAT_POLICY must be jax.checkpoint_policies.<name>, one of {', '.join(REMAT_POLICIES)}")
    return short


def from_source(text: str, filename: str = "<source>") -> Program:
    """The program a Python file in the emit form describes (validated like a case file)."""
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as e:
        raise SourceError(None, f"line {e.lineno}, column {e.offset}: {e.msg}") from None
    devices: tuple[int, ...] | None = None
    mesh: Mesh | None = None
    values: dict[str, Input] = {}
    fns: dict[str, ast.FunctionDef] = {}
    settings: dict[str, ast.AST] = {}
    call: _Call | None = None
    wrap: ast.Call | None = None
    reshard = False
    edges = _Edges()
    remat_policy: str | None = None
    for i, st in enumerate(tree.body):
        if _skipped(st, i):
            continue
        if isinstance(st, ast.FunctionDef):
            if st.name == "f" and "f" in fns:
                continue  # (programs.emit.reshard_src: f again, the first one's arguments resharded)
            fns[st.name] = st
            continue
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id in ("CALLS", "DONATE"):
            if st.targets[0].id == "DONATE":  # programs.emit.donate_src
                d = _literal(st.value, "DONATE")
                if not isinstance(d, tuple) or not all(isinstance(i, int) for i in d):
                    raise SourceError(st.value, "DONATE is a tuple of argument indices")
                edges.donate = d
            continue
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            raise SourceError(st, "expected `name = ...` (mesh, an argument, in_specs, out_specs, axis_names, check_vma, "
                              "f = jax.shard_map(...)) or `def body(...)`")
        name, v = st.targets[0].id, st.value
        if name == "REMAT_POLICY":  # programs.emit.remat_lines: the grad_remat mode's checkpoint policy
            remat_policy = _remat_policy(v)
            continue
        if name == "devices":
            devices = _devices(v)
        elif name == "mesh":
            mesh = _mesh(v, devices)
        elif name in ("in_specs", "out_specs", "axis_names", "check_vma"):
            settings[name] = v
        elif _shard_map_call(v) is not None:
            call = _shard_map_call(v)
        elif isinstance(v, ast.Call) and _dotted(v.func) in ("jax.sharding.auto_axes", "jax.sharding.explicit_axes"):
            wrap = v  # programs.emit.call_src: the call inside auto_axes / explicit_axes (def call)
        elif isinstance(v, ast.Name) and name == f"_{v.id}_shard_map":
            reshard = True  # programs.emit.reshard_src: the call's arguments resharded to their in_specs
        else:
            values[name] = _input(v)
    if mesh is None:
        raise SourceError(None, "line 1, column 1: no mesh: write mesh = jax.make_mesh((2,), ('x',))")
    wrapped = _wrap_of(wrap, fns, mesh) if wrap is not None else None
    if wrapped is not None:
        mesh, call, reshard = wrapped[0], wrapped[1], wrapped[2]
    fn_name = "body"
    every: list[str] | None = None
    passed: list[str] | None = None
    if "place" in fns:
        _read_place(fns["place"], edges)
    if call is None and "f" in fns:  # programs.emit._called_src: def f(...) makes the shard_map
        sm, passed, factory = _read_called(fns["f"], edges)
        call = _shard_map_call(sm)
        every = [a.arg for a in fns["f"].args.args]
        if factory is not None:
            fns = {**fns, **_factory_body(fns, factory)}
    if call is not None:
        if isinstance(call.fn, ast.Name):
            fn_name = call.fn.id
        for k in call.keywords:
            if k.arg in ("in_specs", "out_specs", "axis_names", "check_vma"):
                settings[k.arg] = k.value
            elif k.arg != "mesh":
                raise SourceError(k.value, f"jax.shard_map has no argument {k.arg!r} shardfuzz reads")
    if fn_name not in fns:
        raise SourceError(call.node if call else None, f"no `def {fn_name}(...)`: define the shard_map body")
    args, ops, outputs, effects = _body_fn(fns[fn_name], values, edges, every)
    if passed is not None and [a.arg for a in fns[fn_name].args.args] != passed:
        raise SourceError(fns[fn_name], f"the body takes {[a.arg for a in fns[fn_name].args.args]}, but the shard_map is given {passed}")
    # (in_specs left out of the call: jax infers them from the arguments, CallForm "omitted")
    omitted = call is not None and "in_specs" not in settings and not any(k.arg == "in_specs" for k in call.keywords)
    for need in ("out_specs",) if omitted else ("in_specs", "out_specs"):
        if need not in settings:
            raise SourceError(fns[fn_name], f"no {need}: write {need} = (P('x'),) or pass {need}= to jax.shard_map")
    axis_names: tuple[str, ...] | None = None
    names_form = "set"
    if "axis_names" in settings:
        node = settings["axis_names"]
        if isinstance(node, ast.Call) and _dotted(node.func) == "frozenset" and len(node.args) == 1:
            names_form, settings["axis_names"] = "frozenset", node.args[0]
        names = _literal(settings["axis_names"], "axis_names")
        if not isinstance(names, (set, frozenset, tuple, list)) or not all(isinstance(a, str) for a in names):
            raise SourceError(settings["axis_names"], "axis_names is a set of mesh axis names, e.g. {'x'}")
        axis_names = tuple(a for a in mesh.names if a in names) + tuple(sorted(a for a in names if a not in mesh.names))
    check_vma = True
    if "check_vma" in settings:
        cv = _literal(settings["check_vma"], "check_vma")
        if not isinstance(cv, bool):
            raise SourceError(settings["check_vma"], "check_vma is True or False")
        check_vma = cv
    if omitted:
        in_specs, in_form = _resharded_specs(fns.get("f"), len(args)) if reshard else ((Spec(()),) * len(args)), "omitted"
    else:
        in_specs, in_form = _form_specs(settings["in_specs"], len(args))
    out_specs, out_form = _form_specs(settings["out_specs"], len(outputs))
    inputs = tuple(replace(values[edges.constants.get(a, a)], place=edges.places.get(a), closure=edges.closures.get(a)) for a in args)
    if any(x.closure is not None for x in inputs):  # (a closed-over value's in_spec is P(): the shard_map takes none)
        given = iter(in_specs)
        in_specs = tuple(Spec(()) if x.closure is not None else next(given, Spec(())) for x in inputs)
    # a spec naming an axis the mesh lacks is the mistake the oracle explains: record it
    # as the defect that puts it there, so validation lets it through
    defect = None
    mesh_axes = set(mesh.names)
    for which, specs in (("out_specs", out_specs), ("in_specs", in_specs)):
        if any(a not in mesh_axes for s in specs for a in s.axes()):
            defect = sorted(EXPLAINED_BY[which])[0]
    context = call is not None and all(k.arg != "mesh" for k in call.keywords)
    form = CallForm(call.style if call is not None else "call", in_form, out_form, names_form)
    p = Program(mesh, inputs, in_specs, tuple(ops), outputs, out_specs, axis_names, check_vma, defect,
                mesh_context=context, reshard=reshard, remat_policy=remat_policy, form=form,
                effects=tuple(Effect(edges.effects[k][0], effects[k]) for k in sorted(edges.effects)), donate=edges.donate)
    if wrapped is not None:
        p = replace(p, wrap=wrapped[3], wrap_axes=wrapped[4], wrap_specs=wrapped[5])
    if math.prod(mesh.sizes) < 1:
        raise SourceError(None, "the mesh needs at least one device")
    validate(p)
    return p


def _factory_body(fns: dict[str, ast.FunctionDef], factory: str) -> dict[str, ast.FunctionDef]:
    """`def make_body(a1, ...)` holding `def body(...)` (programs.emit.body_source, a body
    closing over values of the called function): its body, as `body`."""
    if factory not in fns:
        raise SourceError(None, f"line 1, column 1: no `def {factory}(...)` making the body")
    inner = [st for st in fns[factory].body if isinstance(st, ast.FunctionDef)]
    if len(inner) != 1:
        raise SourceError(fns[factory], f"`def {factory}` holds one `def body(...)` and returns it")
    return {inner[0].name: inner[0]}


def canonical(p: Program) -> Program:
    """`p` as its emitted source says it: what `from_source(to_python(p))` must give back.
    The emit form does not carry what has no effect: a parameter equal to None (`Op.p`
    reads it as absent), an iota argument's unused seed, and the defect label and notes
    (the source records a defect only where validation needs one)."""
    def op(o: Op) -> Op:
        params = {k: v for k, v in o.params if v is not None}
        if o.kind == "shard_map":
            params["inner_params"] = tuple(kv for kv in o.p("inner_params") if kv[1] is not None)  # type: ignore[union-attr, index]
        return Op.make(o.kind, o.operands, **params)

    inputs = tuple(Input(x.shape, x.dtype, x.fill, x.seed if x.fill == "small" else 0, x.offset, x.place, x.closure) for x in p.inputs)
    return replace(p, inputs=inputs, body=tuple(op(o) for o in p.body), defect=None, notes=())
