"""Invalid programs: each defect is drawn, recorded, and predicted as the right error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oracles import ErrorKind, predict
from strategies import programs
from strategies.explicit_defects import EXPLICIT_DEFECTS
from strategies.invalid import DEFECTS, TRACED_DEFECTS

# what the oracle must predict for each defect (None: the program must run)
EXPECTED = {
    "in_spec_str": ErrorKind.SPEC_TYPE,
    "in_spec_tuple": ErrorKind.SPEC_TYPE,
    "out_spec_str": ErrorKind.SPEC_TYPE,
    "out_spec_tuple": ErrorKind.SPEC_TYPE,
    "out_spec_none": ErrorKind.OUT_SPECS_STRUCTURE,
    "in_specs_extra": ErrorKind.IN_SPECS_STRUCTURE,
    "in_specs_missing": ErrorKind.IN_SPECS_STRUCTURE,
    "out_specs_extra": ErrorKind.OUT_SPECS_STRUCTURE,
    "out_specs_missing": ErrorKind.OUT_SPECS_STRUCTURE,
    "in_spec_too_long": ErrorKind.IN_SPEC_RANK,
    "out_spec_too_long": ErrorKind.OUT_SPEC_RANK,
    "in_spec_indivisible": ErrorKind.IN_SPEC_DIVISIBILITY,
    "in_spec_duplicate_axis": ErrorKind.SPEC_DUPLICATE_AXIS,
    "out_spec_duplicate_axis": ErrorKind.SPEC_DUPLICATE_AXIS,
    "in_spec_unknown_axis": ErrorKind.SPEC_UNKNOWN_AXIS,
    "out_spec_unknown_axis": ErrorKind.SPEC_UNKNOWN_AXIS,
    "collective_unknown_axis": ErrorKind.UNBOUND_AXIS,
    "collective_not_manual": ErrorKind.UNBOUND_AXIS,
    "out_spec_drops_varying_axis": ErrorKind.OUT_SPEC_REPLICATION,
    "out_spec_drops_varying_axis_unchecked": None,
    "collective_mixed_vma": ErrorKind.COLLECTIVE_VMA,
    "psum_scatter_bad_size": ErrorKind.COLLECTIVE_SHAPE,
    "all_to_all_bad_size": ErrorKind.COLLECTIVE_SHAPE,
    "pswapaxes_bad_size": ErrorKind.COLLECTIVE_SHAPE,
    "axis_out_of_range": ErrorKind.COLLECTIVE_PARAM,
    "bad_permutation": ErrorKind.COLLECTIVE_PARAM,
    "bad_groups": ErrorKind.COLLECTIVE_PARAM,
    "transform_integer_operand": ErrorKind.TRANSFORM,
    # explicit meshes, reduced / unreduced (strategies/explicit_defects.py)
    "missing_reshard": ErrorKind.IN_SPEC_ARG_SHARDING,
    "placement_mismatch": ErrorKind.IN_SPEC_ARG_SHARDING,
    "explicit_axes_in_sharding": ErrorKind.IN_SPEC_ARG_SHARDING,
    "out_spec_drops_reduced": ErrorKind.OUT_SPEC_REPLICATION,
    "unreduced_spec_auto_axis": ErrorKind.UNREDUCED_TYPE,
    # forms jax rejects (strategies/forms.py)
    "axes_list": ErrorKind.COLLECTIVE_PARAM,
    "in_specs_list": ErrorKind.IN_SPECS_STRUCTURE,
    "out_specs_list": ErrorKind.OUT_SPECS_STRUCTURE,
    "in_specs_omitted": ErrorKind.SPEC_TYPE,
    "nested_in_specs_omitted": ErrorKind.SPEC_TYPE,
}


def test_every_defect_has_an_expectation() -> None:
    assert set(EXPECTED) == set(DEFECTS)


# the explicit-mesh and reduced / unreduced defects apply to few drawn programs (an
# all-Explicit mesh, a reduced output): tests/test_explicit.py applies each to programs
# it holds, and checks the same prediction; so does tests/test_forms.py for a nested
# shard_map's in_specs left out (a program with a nested shard_map over Auto axes)
RARE = set(EXPLICIT_DEFECTS) | {"nested_in_specs_omitted"}


@pytest.mark.parametrize("defect", sorted(set(DEFECTS) - RARE))
# (filter_too_much: with mixed meshes drawn, fewer programs are all-Auto, where most of
# these defects apply; the assume below still fails the test if none takes its defect)
@settings(max_examples=15, database=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_defect_is_predicted(defect: str, data: st.DataObject) -> None:
    p = data.draw(programs(invalid=1.0, defects=(defect,)))
    # some programs offer no place for a defect; Hypothesis fails the test (Unsatisfiable)
    # if none of the drawn ones does, so no defect goes untested
    assume(p.defect is not None)
    assert p.defect == defect
    pred = predict(p)
    want = EXPECTED[defect]
    got = None if pred.error is None else pred.error.kind
    assert got == want, f"{defect}: oracle predicts {got}, expected {want}\n{p!r}"
    if pred.error is not None:
        assert pred.error.why, "every predicted error explains itself"


@pytest.mark.parametrize("defect", sorted(set(DEFECTS) - RARE))
@settings(max_examples=10, database=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_traced_defects_are_those_found_after_the_body_is_traced(defect: str, data: st.DataObject) -> None:
    """strategies/invalid.py `TRACED_DEFECTS` (a by_error focus draws only those: its op
    checks its cells by error only when traced) are the defects under which the oracle
    types the body's ops before the error (jax's order: oracles/checks.py); under the
    others it types none of them."""
    from oracles.interpreter import trace

    p = data.draw(programs(invalid=1.0, defects=(defect,)))
    assume(p.defect is not None and len(p.body) >= 3)
    st_, err = trace(p, with_values=False)
    typed_ops = len(st_.types) - len(p.inputs)
    if defect in TRACED_DEFECTS:
        assert err is not None and typed_ops >= 1, f"{defect}: {typed_ops} body ops typed\n{p!r}"
    else:
        assert err is None or typed_ops <= 0, f"{defect}: the oracle typed {typed_ops} body ops before the error\n{p!r}"
