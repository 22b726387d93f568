"""jax bug found by shardfuzz (issue 15, the transform op): jax.jvp of a jax.custom_vjp
function inside an eager (un-jitted) shard_map raises TypeError "unhashable type: 'list'"
instead of the documented TypeError "can't apply forward-mode autodiff (jvp) to a
custom_vjp function." that the same body gives outside shard_map (eager or jit) and under
jit inside it. Measured on jax 0.5.3, 0.6.0, 0.9.2, 0.10.2 and 0.12.0.

(jax raises the documented error late by design: jvp binds custom_lin, whose abstract
eval passes and whose impl raises, so jax.eval_shape runs the program and an unused result
never raises; oracles/ops/transform.py. That is why the strategies never draw jvp of a
custom_vjp, and this has no known entry yet.)
Exit 1 (BUG) while eager shard_map garbles the error, 0 (FIXED) once it names custom_vjp."""
import os
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

f = jax.custom_vjp(lambda c: -c)
f.defvjp(lambda c: (-c, c), lambda c, ct: (-ct,))
mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("i",))
body = lambda x: jax.jvp(f, (x,), (x * 0.5 + 1,))[1]  # noqa: E731
smap = getattr(jax, "shard_map", None)
if smap is None:  # (jax before 0.6: jax.experimental.shard_map)
    from jax.experimental.shard_map import shard_map as smap
g = smap(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
try:
    g(np.arange(4.0, dtype=np.float32))
except TypeError as e:
    if "custom_vjp" in str(e):
        print(f"FIXED (jax {jax.__version__}): {e}")
        sys.exit(0)
    print(f"BUG (jax {jax.__version__}): eager shard_map raised TypeError: {str(e)[:200]}")
    sys.exit(1)
print(f"BUG (jax {jax.__version__}): jvp of a custom_vjp ran")
sys.exit(1)
