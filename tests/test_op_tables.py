"""One op, one definition per room: the op table is the only list of op kinds.

The op table (`programs.ops.OP_TABLE`) lists every kind once; the syntax, the lowering
(built from the table's call templates, resolved on the installed jax) and emit's source
form are derived from it, and each other room builds its registry from the table's kinds:
the oracle's `OPS` (one class per kind, found in `oracles/ops/`), the strategy's
`ALL_KINDS` and draw tables (one draw per kind, found by name). Each registry equals the
table, kind for kind and in its order, and building one from a table it does not match
fails with a message that names the kind and the fix.
"""

from __future__ import annotations

import types

import pytest
from hypothesis import HealthCheck, find, settings

from programs.body_text import op_source
from programs.model import Op, ParamValue
from programs.ops import (
    BINARY_OPS,
    COMPOUND_OPS,
    LOCAL_OPS,
    MODULE_SOURCE,
    NESTED_INNER,
    OP_KINDS,
    OP_TABLE,
    PLAIN_COLLECTIVES,
    REDUCTIONS,
    SYNTAX,
    TRANSFORM_STEP_KINDS,
    OpDesc,
)

KINDS = sorted(OP_TABLE)

# one value per parameter type, enough for a source form
_EXAMPLE: dict[str, ParamValue] = {
    "axes": ("x",), "int": 0, "bool": True, "dtype": "float32", "shape": (2,), "scalar": 1, "ints": (1, 0),
    "pairs": ((0, 1), (1, 0)), "groups": ((0, 1),), "vary": "varying", "spec": ((("x",)),), "kind": "neg", "params": (),
    "transform": "grad", "custom": "none", "steps": (("neg", (0,), ()),),
}  # fmt: skip


def _example(d: OpDesc) -> Op:
    params = {p.name: _EXAMPLE[p.type] for p in d.params if not p.optional}
    return Op.make(d.kind, tuple(range(d.arity)), **params)


def test_syntax_is_the_table() -> None:
    assert set(SYNTAX) == set(OP_TABLE)
    for d in OP_TABLE.values():
        assert {p.name for p in d.params} == set(SYNTAX[d.kind].params) | set(SYNTAX[d.kind].optional)


def test_the_derived_kind_sets_are_the_table() -> None:
    assert OP_KINDS == tuple(d.kind for d in OP_TABLE.values()) and len(set(OP_KINDS)) == len(OP_KINDS)
    assert set(BINARY_OPS) == {k for k, d in OP_TABLE.items() if d.local and d.arity == 2}
    assert set(REDUCTIONS) == {"psum", "pmean", "pmax", "pmin"}
    assert COMPOUND_OPS == {"shard_map", "transform"}
    assert set(PLAIN_COLLECTIVES) == set(OP_TABLE) - LOCAL_OPS - COMPOUND_OPS
    # the selections a nested shard_map's inner op and a transform's steps draw from
    assert set(NESTED_INNER) <= set(OP_TABLE) - COMPOUND_OPS
    assert set(TRANSFORM_STEP_KINDS) <= set(OP_TABLE) - COMPOUND_OPS


def test_oracle_registry_is_the_table() -> None:
    from oracles.ops import OPS, OpDef

    assert tuple(OPS) == OP_KINDS, f"oracle only: {set(OPS) - set(OP_TABLE)}, table only: {set(OP_TABLE) - set(OPS)}"
    for kind, d in OPS.items():
        assert isinstance(d, OpDef) and d.kind == kind
    assert len({type(d) for d in OPS.values()}) == len(OPS)  # one class per kind


def _module(name: str, defined: tuple[type, ...], imported: tuple[type, ...] = ()) -> types.ModuleType:
    """A module that defines the classes `defined` and imports `imported`."""
    m = types.ModuleType(name)
    for cls in defined:
        cls.__module__ = name
    vars(m).update({c.__name__: c for c in (*defined, *imported)})
    return m


def test_an_oracle_registry_that_misses_the_table_fails_by_name() -> None:
    from oracles.ops import OpDef, registry
    from oracles.ops.reductions import Pmin

    class Pmin2(Pmin):
        kind = "pmin2"

    class Base(OpDef):  # sets no kind of its own: no op's class
        pass

    fake = _module("oracles.ops.fake", (Pmin2, Base), imported=(Pmin,))  # (Pmin's class is reductions')
    assert set(registry(("pmin2",), [fake])) == {"pmin2"}
    with pytest.raises(LookupError, match=r"\['pmax2'\] of programs/ops.py have no oracle class: define a class with kind = 'pmax2'"):
        registry(("pmin2", "pmax2"), [fake])
    with pytest.raises(LookupError, match=r"oracle classes of op kinds \['pmin2'\] that programs/ops.py has no row for"):
        registry((), [fake])

    class Other(OpDef):
        kind = "pmin2"

    with pytest.raises(LookupError, match=r"more than one oracle class: \{'pmin2': \['Pmin2', 'Other'\]\}"):
        registry(("pmin2",), [fake, _module("oracles.ops.other", (Other,))])


def test_lowering_covers_the_table_and_resolves_on_this_jax() -> None:
    import operator

    import jax
    import jax.numpy as jnp

    from harness.run.lowering import lowering_table

    assert set(lowering_table()) == set(OP_TABLE)
    modules = {"jax": jax, "jax.lax": jax.lax, "jax.numpy": jnp, "operator": operator}
    for d in OP_TABLE.values():
        c = d.call
        if c.module == "method":
            assert hasattr(jnp.zeros(1), c.function), d.kind
        elif c.module == "template":  # the transform's source text: every jax function it names
            import re

            from programs.ops import CUSTOM_SOURCE, TRANSFORM_SOURCE

            names = set(re.findall(r"jax\.(\w+)", " ".join([*TRANSFORM_SOURCE.values(), *CUSTOM_SOURCE.values()])))
            assert names == {"jvp", "vjp", "grad", "custom_jvp", "custom_vjp"}
            assert all(callable(getattr(jax, n)) for n in names), d.kind
        else:
            assert callable(getattr(modules[c.module], c.function)), d.kind


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_a_source_form(kind: str) -> None:
    d = OP_TABLE[kind]
    src = op_source(_example(d), ["a", "b", "c", "d", "e", "f"])
    if d.call.module in MODULE_SOURCE:
        assert src.startswith(f"{MODULE_SOURCE[d.call.module]}.{d.call.function}("), src
    for a in d.call.args:  # every keyword the template names is written
        assert not a.keyword or a.omit_none or f"{a.keyword}=" in src, (a, src)
    compile(src, kind, "eval")  # valid Python


def test_the_strategy_draws_every_kind_of_the_table() -> None:
    from strategies.collectives import COLLECTIVE_DRAWS
    from strategies.draws import NOT_DRAWN
    from strategies.local_ops import LOCAL_DRAWS
    from strategies.programs import ALL_KINDS

    assert set(NOT_DRAWN) <= set(OP_TABLE) and all(NOT_DRAWN.values())  # each with why
    assert ALL_KINDS == tuple(k for k in OP_KINDS if k not in NOT_DRAWN)
    assert tuple(LOCAL_DRAWS) == tuple(k for k in ALL_KINDS if k in LOCAL_OPS)
    assert tuple(COLLECTIVE_DRAWS) == tuple(k for k in ALL_KINDS if k in PLAIN_COLLECTIVES)
    # the rest are the compound kinds, drawn by strategies/nested.py and strategies/transform.py
    assert set(ALL_KINDS) - set(LOCAL_DRAWS) - set(COLLECTIVE_DRAWS) == COMPOUND_OPS - set(NOT_DRAWN)


def test_a_draw_table_finds_draws_by_name_and_fails_on_a_missing_one() -> None:
    from strategies.draws import table_draws

    def _pshuffle(b: object, draw: object, idx: int, axes: tuple[str, ...]) -> bool:
        return True

    def _reduction(b: object, draw: object, idx: int, axes: tuple[str, ...], kind: str) -> bool:
        return kind == "pmax"

    found = table_draws(("pmax", "pshuffle"), {"_pshuffle": _pshuffle, "_reduction": _reduction}, "here.py")
    assert list(found) == ["pmax", "pshuffle"] and found["pshuffle"] is _pshuffle
    assert found["pmax"](None, None, 0, ("x",))  # a reduction's family draw, given its kind
    with pytest.raises(LookupError, match=r"op kinds \['all_gather'\] of programs/ops.py have no draw in here.py: define _all_gather there"):
        table_draws(("pmax", "all_gather"), {"_reduction": _reduction}, "here.py")


@pytest.mark.parametrize("kind", ["axis_size", "pbroadcast", "ragged_all_to_all", "shard_map", "psum", "transform"])
def test_a_program_of_the_kind_is_drawn(kind: str) -> None:
    from strategies import programs

    p = find(
        programs(kinds=(kind, "neg"), max_ops=4),
        lambda p: any(o.kind == kind for o in p.body),
        settings=settings(max_examples=2000, database=None, suppress_health_check=list(HealthCheck)),
    )
    assert any(o.kind == kind for o in p.body)


def test_pbroadcast_names_its_axes_as_a_tuple() -> None:
    # jax 0.10.2 checks a single string axis name of pbroadcast character by character
    # (NameError "unbound axis name: d" for 'data'); a tuple is the form it handles
    src = op_source(Op.make("pbroadcast", (0,), axes=("data",), source=1), ["a0"])
    assert src == "jax.lax.pbroadcast(a0, ('data',), 1)", src
    assert op_source(Op.make("psum", (0,), axes=("data",)), ["a0"]) == "jax.lax.psum(a0, 'data')"
