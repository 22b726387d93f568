"""JSON round-trip for programs, with a schema version.

JSON case files are the unit of exchange between fuzzing, replay, minimization, the
corpus and release qualification. `from_json` validates everything it reads and raises
`ProgramFormatError` naming the offending field, so a bad case file is one clear line:
first the structure (here), then the meaning (`programs/validate.py`: a mesh jax can
build, shapes and dtypes that exist, names that resolve).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from programs.errors import ProgramFormatError
from programs.model import (
    AXIS_NAMES_FORMS,
    CALL_STYLES,
    CALL_WRAPS,
    CLOSURES,
    DTYPES,
    EFFECT_KINDS,
    IN_SPECS_FORMS,
    OUT_SPECS_FORMS,
    PLACE_HOWS,
    CallForm,
    Effect,
    Input,
    Mesh,
    Op,
    ParamValue,
    Place,
    Program,
    Spec,
)
from programs.ops import SYNTAX, WRAPS
from programs.points import REMAT_POLICIES
from programs.validate import validate

__all__ = ["SCHEMA_VERSION", "from_json", "program_from_dict", "program_id", "program_to_dict", "to_json"]

SCHEMA_VERSION = 1


def _spec_to_json(s: Spec) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": s.kind, "entries": [None if e is None else list(e) for e in s.entries]}
    # only when set, so every program without them keeps its JSON (and its id)
    for key in ("unreduced", "reduced"):
        if getattr(s, key):
            d[key] = list(getattr(s, key))
    return d


def _param_to_json(v: ParamValue) -> Any:
    if isinstance(v, tuple):
        return [_param_to_json(x) for x in v]
    return v


def program_to_dict(p: Program) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "mesh": {
            "names": list(p.mesh.names),
            "sizes": list(p.mesh.sizes),
            "axis_types": list(p.mesh.axis_types),
        },
        "inputs": [
            # an offset, a placement, a closure only when set, so every program without one
            # keeps its JSON (and id)
            {"shape": list(i.shape), "dtype": i.dtype, "fill": i.fill, "seed": i.seed, **({"offset": i.offset} if i.offset else {}),
             **({"place": {"how": i.place.how, "spec": _spec_to_json(i.place.spec)}} if i.place is not None else {}),
             **({"closure": i.closure} if i.closure is not None else {})}
            for i in p.inputs
        ],
        "in_specs": [_spec_to_json(s) for s in p.in_specs],
        "body": [
            {
                "kind": op.kind,
                "operands": list(op.operands),
                "params": {k: _param_to_json(v) for k, v in op.params},
            }
            for op in p.body
        ],
        "outputs": list(p.outputs),
        "out_specs": [_spec_to_json(s) for s in p.out_specs],
        "axis_names": None if p.axis_names is None else list(p.axis_names),
        "check_vma": p.check_vma,
        "defect": p.defect,
        "notes": {k: _param_to_json(v) for k, v in p.notes},
        # only when set (explicit-mesh programs), so older programs keep their ids
        **({"mesh_context": True} if p.mesh_context else {}),
        **({"reshard": True} if p.reshard else {}),
        **({"wrap": {"kind": p.wrap, "axes": list(p.wrap_axes), "specs": [_spec_to_json(s) for s in p.wrap_specs]}} if p.wrap else {}),
        **({"effects": [{"kind": e.kind, "value": e.value} for e in p.effects]} if p.effects else {}),
        **({"donate": list(p.donate)} if p.donate else {}),
        **({"remat_policy": p.remat_policy} if p.remat_policy is not None else {}),
        # only the fields that differ from the plain call, so older programs keep their ids
        **({"form": p.form.changed()} if p.form.changed() else {}),
    }


def to_json(p: Program, indent: int | None = 1) -> str:
    return json.dumps(program_to_dict(p), indent=indent, sort_keys=False)


def _req(d: Any, key: str, where: str, typ: type | tuple[type, ...]) -> Any:
    if not isinstance(d, dict):
        raise ProgramFormatError(f"{where}: expected an object, got {type(d).__name__}")
    if key not in d:
        raise ProgramFormatError(f"{where}: missing field {key!r}")
    v = d[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is int):
        name = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise ProgramFormatError(f"{where}.{key}: expected {name}, got {v!r}")
    return v


def _ints(v: Any, where: str) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise ProgramFormatError(f"{where}: expected a list of integers, got {v!r}")
    return tuple(v)


def _strs(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ProgramFormatError(f"{where}: expected a list of strings, got {v!r}")
    return tuple(v)


def _spec_from_json(d: Any, where: str) -> Spec:
    kind = _req(d, "kind", where, str)
    if kind not in ("P", "str", "tuple", "none"):
        raise ProgramFormatError(f"{where}.kind: unknown spec kind {kind!r}")
    entries = _req(d, "entries", where, list)
    out = []
    for j, e in enumerate(entries):
        out.append(None if e is None else _strs(e, f"{where}.entries[{j}]"))
    ur = {key: _strs(d[key], f"{where}.{key}") if key in d else () for key in ("unreduced", "reduced")}
    return Spec(tuple(out), kind, ur["unreduced"], ur["reduced"])


def _param_from_json(v: Any, where: str) -> ParamValue:
    if isinstance(v, list):
        return tuple(_param_from_json(x, where) for x in v)
    if v is None or isinstance(v, (int, str, bool, float)):
        return v
    raise ProgramFormatError(f"{where}: parameter value {v!r} is not a scalar or list")


def program_from_dict(d: Any, check: bool = True) -> Program:
    """The program a JSON object describes. `check=False` skips `validate` (the worker
    process: its programs come from a parent that read and checked them, or drew them).
    Fields are checked in document order, so the first bad field is the one named."""
    schema = _req(d, "schema", "program", int)
    if schema != SCHEMA_VERSION:
        raise ProgramFormatError(
            f"program.schema: version {schema} is not supported (this shardfuzz reads {SCHEMA_VERSION})"
        )
    mesh = _mesh_from_json(_req(d, "mesh", "program", dict))
    inputs = tuple(_input_from_json(x, f"inputs[{i}]") for i, x in enumerate(_req(d, "inputs", "program", list)))
    in_specs = _specs_from_json(d, "in_specs")
    n_in = len(inputs)
    body = tuple(_op_from_json(o, i, n_in) for i, o in enumerate(_req(d, "body", "program", list)))
    outputs = _outputs_from_json(d, n_in, len(body))
    out_specs = _specs_from_json(d, "out_specs")
    axis_names, check_vma, defect, notes = _options_from_json(d)
    p = Program(
        mesh=mesh,
        inputs=inputs,
        in_specs=in_specs,
        body=body,
        outputs=outputs,
        out_specs=out_specs,
        axis_names=axis_names,
        check_vma=check_vma,
        defect=defect,
        notes=notes,
        mesh_context=_flag(d, "mesh_context"),
        reshard=_flag(d, "reshard"),
        **_wrap_from_json(d.get("wrap")),
        effects=_effects_from_json(d.get("effects"), n_in + len(body)),
        donate=_donate_from_json(d.get("donate"), n_in),
        remat_policy=_remat_policy_from_json(d.get("remat_policy")),
        form=_form_from_json(d.get("form")),
    )
    if check:
        validate(p)
    return p


def _wrap_from_json(w: Any) -> dict[str, Any]:
    """The optional "wrap" object (absent in cases written before it: no wrapper)."""
    if w is None:
        return {}
    if not isinstance(w, dict):
        raise ProgramFormatError(f"program.wrap must be an object {{kind, axes, specs}}, got {type(w).__name__}")
    kind = _req(w, "kind", "program.wrap", str)
    if kind not in CALL_WRAPS:
        raise ProgramFormatError(f"program.wrap.kind={kind!r} must be one of {list(CALL_WRAPS)}")
    axes = _strs(_req(w, "axes", "program.wrap", list), "program.wrap.axes")
    specs = tuple(_spec_from_json(s, f"program.wrap.specs[{i}]") for i, s in enumerate(_req(w, "specs", "program.wrap", list)))
    return {"wrap": kind, "wrap_axes": axes, "wrap_specs": specs}


def _effects_from_json(es: Any, n_values: int) -> tuple[Effect, ...]:
    """The optional "effects" list (absent in cases written before it: none)."""
    if es is None:
        return ()
    if not isinstance(es, list):
        raise ProgramFormatError(f"program.effects must be a list of {{kind, value}}, got {type(es).__name__}")
    out = []
    for j, e in enumerate(es):
        w = f"program.effects[{j}]"
        kind = _req(e, "kind", w, str)
        if kind not in EFFECT_KINDS:
            raise ProgramFormatError(f"{w}.kind={kind!r} must be one of {list(EFFECT_KINDS)}")
        v = _req(e, "value", w, int)
        if not 0 <= v < n_values:
            raise ProgramFormatError(f"{w}.value={v} is not a value of the program (0..{n_values - 1}); name an argument or an op's result")
        out.append(Effect(kind, v))
    return tuple(out)


def _donate_from_json(ds: Any, n_in: int) -> tuple[int, ...]:
    """The optional "donate" list of argument indices (absent: none donated)."""
    if ds is None:
        return ()
    got = _ints(ds, "program.donate")
    bad = [i for i in got if not 0 <= i < n_in]
    if bad or len(set(got)) != len(got):
        raise ProgramFormatError(f"program.donate={list(got)}: name each argument (0..{n_in - 1}) at most once")
    return got


def _place_from_json(x: Any, w: str) -> Place | None:
    if x is None:
        return None
    how = _req(x, "how", w, str)
    if how not in PLACE_HOWS:
        raise ProgramFormatError(f"{w}.how={how!r} must be one of {list(PLACE_HOWS)}")
    return Place(how, _spec_from_json(x["spec"], f"{w}.spec") if "spec" in x else Spec())


def _remat_policy_from_json(v: Any) -> str | None:
    """The optional "remat_policy" (absent: the default policy)."""
    if v is not None and v not in REMAT_POLICIES:
        raise ProgramFormatError(f"program.remat_policy={v!r} must be null or one of {list(REMAT_POLICIES)}")
    return v  # type: ignore[no-any-return]


_FORMS = {"style": CALL_STYLES, "in_specs": IN_SPECS_FORMS, "out_specs": OUT_SPECS_FORMS, "axis_names": AXIS_NAMES_FORMS}


def _form_from_json(v: Any) -> CallForm:
    """The optional "form" object: how the call is written (absent: the plain call)."""
    if v is None:
        return CallForm()
    if not isinstance(v, dict):
        raise ProgramFormatError(f"program.form must be an object {{style, in_specs, out_specs, axis_names}}, got {type(v).__name__}")
    for k, x in v.items():
        if k not in _FORMS:
            raise ProgramFormatError(f"program.form: unknown field {k!r} (known: {', '.join(_FORMS)})")
        if x not in _FORMS[k]:
            raise ProgramFormatError(f"program.form.{k}={x!r} must be one of {list(_FORMS[k])}")
    return CallForm(**v)


def _mesh_from_json(m: dict[str, Any]) -> Mesh:
    names = _strs(_req(m, "names", "mesh", list), "mesh.names")
    sizes = _ints(_req(m, "sizes", "mesh", list), "mesh.sizes")
    types = _strs(m.get("axis_types", ["auto"] * len(names)), "mesh.axis_types")
    try:
        return Mesh(names, sizes, types)
    except ValueError as e:
        raise ProgramFormatError(f"mesh: {e}") from None


def _input_from_json(x: Any, w: str) -> Input:
    dtype = _req(x, "dtype", w, str)
    if dtype not in DTYPES:
        raise ProgramFormatError(f"{w}.dtype: {dtype!r} is not a dtype shardfuzz knows; use one of {DTYPES}")
    fill = x.get("fill", "small")
    if fill not in ("small", "iota"):
        raise ProgramFormatError(f"{w}.fill: {fill!r} is not 'small' or 'iota'")
    seed = x.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ProgramFormatError(f"{w}.seed: expected an integer, got {seed!r}")
    offset = x.get("offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise ProgramFormatError(f"{w}.offset: expected an integer, got {offset!r}")
    if offset and fill != "iota":
        raise ProgramFormatError(f"{w}.offset: only an iota argument has an offset (its first value); "
                                 f"this one is {fill!r}: drop the offset or make fill 'iota'")
    closure = x.get("closure")
    if closure is not None and closure not in CLOSURES:
        raise ProgramFormatError(f"{w}.closure={closure!r} must be one of {list(CLOSURES)} or absent (a shard_map argument)")
    return Input(_ints(_req(x, "shape", w, list), f"{w}.shape"), dtype, fill, seed, offset,
                 _place_from_json(x.get("place"), f"{w}.place"), closure)


def _specs_from_json(d: dict[str, Any], key: str) -> tuple[Spec, ...]:
    """The `in_specs` or `out_specs` list."""
    return tuple(_spec_from_json(s, f"{key}[{i}]") for i, s in enumerate(_req(d, key, "program", list)))


def _op_from_json(o: Any, i: int, n_in: int) -> Op:
    """Body op `i`: a known kind, its arity, operands defined before it (the `n_in`
    arguments, then the results of ops 0..i-1) and exactly its syntax's parameters."""
    w = f"body[{i}]"
    kind = _req(o, "kind", w, str)
    if kind not in SYNTAX:
        raise ProgramFormatError(f"{w}.kind: unknown op {kind!r} (known: {', '.join(sorted(SYNTAX))})")
    syn = SYNTAX[kind]
    operands = _ints(_req(o, "operands", w, list), f"{w}.operands")
    if len(operands) != syn.arity:
        raise ProgramFormatError(f"{w}: {kind} takes {syn.arity} operands, got {len(operands)}")
    for v in operands:
        if not 0 <= v < n_in + i:
            raise ProgramFormatError(
                f"{w}.operands: value {v} is not defined before this op; an op reads only values "
                f"0..{n_in + i - 1} (the {n_in} arguments, then each earlier op's result)"
            )
    params = _req(o, "params", w, dict)
    missing = [p for p in syn.params if p not in params]
    unknown = [p for p in params if p not in syn.params and p not in syn.optional]
    if missing or unknown:
        raise ProgramFormatError(f"{w}: {kind} params missing {missing}, unknown {unknown}")
    if params.get("wrap") not in (None, *WRAPS):
        raise ProgramFormatError(f"{w}.params.wrap: {params['wrap']!r} is not one of {WRAPS}")
    return Op(kind, operands, tuple(sorted((k, _param_from_json(v, f"{w}.params.{k}")) for k, v in params.items())))


def _outputs_from_json(d: dict[str, Any], n_in: int, n_body: int) -> tuple[int, ...]:
    outputs = _ints(_req(d, "outputs", "program", list), "program.outputs")
    for v in outputs:
        if not 0 <= v < n_in + n_body:
            raise ProgramFormatError(
                f"program.outputs: value {v} is not defined; outputs name values 0..{n_in + n_body - 1} "
                f"(the {n_in} arguments, then the {n_body} ops' results)"
            )
    return outputs


def _options_from_json(
    d: dict[str, Any],
) -> tuple[tuple[str, ...] | None, bool, str | None, tuple[tuple[str, ParamValue], ...]]:
    """The optional fields: axis_names, check_vma, defect and notes."""
    axis_names = d.get("axis_names")
    if axis_names is not None:
        axis_names = _strs(axis_names, "program.axis_names")
    check_vma = d.get("check_vma", True)
    if not isinstance(check_vma, bool):
        raise ProgramFormatError(f"program.check_vma: expected true/false, got {check_vma!r}")
    defect = d.get("defect")
    if defect is not None and not isinstance(defect, str):
        raise ProgramFormatError(f"program.defect: expected a defect name or null, got {defect!r}")
    notes = d.get("notes") or {}
    if not isinstance(notes, dict):
        raise ProgramFormatError(f"program.notes: expected an object, got {notes!r}")
    return axis_names, check_vma, defect, tuple(sorted((k, _param_from_json(v, f"notes.{k}")) for k, v in notes.items()))


def _flag(d: dict[str, Any], key: str) -> bool:
    v = d.get(key, False)
    if not isinstance(v, bool):
        raise ProgramFormatError(f"program.{key}: expected true/false, got {v!r}")
    return v


def from_json(text: str) -> Program:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProgramFormatError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if isinstance(d, dict) and "program" in d and "schema" not in d:
        d = d["program"]  # a case file wraps the program with its verdict
    return program_from_dict(d)


@functools.lru_cache(maxsize=4096)
def program_id(p: Program) -> str:
    """A stable short id for a program (same program, same id, in every process).
    Cached: a run asks for it several times per program."""
    return hashlib.sha256(to_json(p, indent=None).encode()).hexdigest()[:12]
