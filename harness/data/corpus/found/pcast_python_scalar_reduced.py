"""jax bug found by shardfuzz (issue 15, reduced / unreduced): pcast(to='reduced') of a
Python scalar inside shard_map raises an internal AssertionError
("ManualAxisType(varying=frozenset(), unreduced=frozenset(), reduced=frozenset({'x'}))")
on jax 0.10.0 .. 0.12.0, while the same value as jnp.int32(4) works, and 0.9.2 runs it.
jax.lax.axis_size returns such a Python int, so `pcast(axis_size('x'), 'x', to='reduced')`
fails. Exit 1 (BUG) while jax raises, 0 (FIXED) once it returns 8 = psum over x=2 of 4.
Not drawn by the strategies until it has a known entry (strategies/explicit.py)."""
import os
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("x",))
body = lambda a: jax.lax.psum(jax.lax.pcast(jax.lax.pcast(4, "x", to="reduced"), "x", to="varying"), "x")  # noqa: E731
f = jax.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P())
try:
    out = int(jax.jit(f)(np.zeros((), np.int32)))
except Exception as e:  # noqa: BLE001
    print(f"BUG (jax {jax.__version__}): pcast(4, 'x', to='reduced') raised {type(e).__name__}: {str(e)[:200]}")
    sys.exit(1)
if out != 8:
    print(f"BUG (jax {jax.__version__}): got {out}, expected 8")
    sys.exit(1)
print(f"FIXED (jax {jax.__version__}): 8")
