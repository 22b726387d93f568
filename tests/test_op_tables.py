"""One op, one definition per room: every table names the same op kinds.

The op table (`programs.ops.OP_TABLE`, with the syntax derived from it), the oracle's
`OPS`, the lowering (built from the table's call templates, resolved on the installed
jax), emit's source form, and the strategy's draws all cover exactly the same kinds.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, settings

from programs.model import Op, ParamValue
from programs.ops import MODULE_SOURCE, OP_TABLE, SYNTAX, OpDesc

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


def test_oracle_and_table_agree() -> None:
    from oracles.ops import OPS

    assert set(OPS) == set(OP_TABLE), f"oracle only: {set(OPS) - set(OP_TABLE)}, table only: {set(OP_TABLE) - set(OPS)}"
    for kind, d in OPS.items():
        assert d.kind == kind


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
    from programs.emit import op_source

    d = OP_TABLE[kind]
    src = op_source(_example(d), ["a", "b", "c", "d", "e", "f"])
    if d.call.module in MODULE_SOURCE:
        assert src.startswith(f"{MODULE_SOURCE[d.call.module]}.{d.call.function}("), src
    for a in d.call.args:  # every keyword the template names is written
        assert not a.keyword or a.omit_none or f"{a.keyword}=" in src, (a, src)
    compile(src, kind, "eval")  # valid Python


def test_the_strategy_draws_every_kind() -> None:
    from strategies.collectives import COLLECTIVE_DRAWS
    from strategies.local_ops import LOCAL_DRAWS
    from strategies.programs import ALL_KINDS, NOT_DRAWN

    assert set(ALL_KINDS) | set(NOT_DRAWN) == set(OP_TABLE) and not set(ALL_KINDS) & set(NOT_DRAWN)
    assert set(LOCAL_DRAWS) | set(COLLECTIVE_DRAWS) | {"shard_map", "transform"} == set(ALL_KINDS)


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
    from programs.emit import op_source

    src = op_source(Op.make("pbroadcast", (0,), axes=("data",), source=1), ["a0"])
    assert src == "jax.lax.pbroadcast(a0, ('data',), 1)", src
    assert op_source(Op.make("psum", (0,), axes=("data",)), ["a0"]) == "jax.lax.psum(a0, 'data')"
