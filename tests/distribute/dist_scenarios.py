"""Programs run unchanged by tapeflow and by TensorFlow 2.21 (in a subprocess, dist_oracle.py)
under MirroredStrategy on two CPU devices, for test_distribute_differential.py.

A scenario is `scenario(tf, env, fn)`: `env` holds the strategies (`s`: MirroredStrategy
on "/cpu:0" and "/cpu:1", `s2`: another one, `o`: OneDeviceStrategy), `fn` wraps the
computations (`lambda f: f` eagerly, `tf.function` in the "function" mode).  Its result,
or the exception it raises, is turned by `normalize` into plain Python and NumPy data,
which is what is compared.
"""

import re

import numpy as np

MODES = ("eager", "function")
EAGER_ONLY = set()       # scenarios that make variables or test eager-only behaviour
SCENARIOS = {}


def scenario(eager_only=False):
    def register(f):
        SCENARIOS[f.__name__] = f
        if eager_only:
            EAGER_ONLY.add(f.__name__)
        return f
    return register


def cases():
    return [(name, mode) for name in SCENARIOS for mode in MODES if mode == "eager" or name not in EAGER_ONLY]


# -- normalizing results ---------------------------------------------------------------------

_OBJECT = re.compile(r"<[^<>]*? object at 0x[0-9a-f]+>")


def normalize(x):
    kind = type(x).__name__
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return (type(x).__name__, [normalize(v) for v in x])
    if isinstance(x, dict):
        return ("dict", {k: normalize(v) for k, v in sorted(x.items())})
    if kind in ("PerReplica", "Mirrored", "MirroredVariable", "SyncOnReadVariable"):
        return (kind, [normalize(v) for v in x.values])
    if kind == "IndexedSlices":
        return ("IndexedSlices", normalize(x.values), normalize(x.indices))
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return ("value", getattr(x.dtype, "name", x.dtype), np.asarray(x.numpy()))
    if isinstance(x, np.generic):
        return normalize(x.item())
    if isinstance(x, np.ndarray):
        return ("value", x.dtype.name, x)
    return ("python", kind, str(x))


def run_case(tf, env, name, mode):
    fn = (lambda f: f) if mode == "eager" else tf.function
    try:
        return normalize(SCENARIOS[name](tf, env, fn))
    except Exception as e:  # noqa: BLE001 -- the class and message are compared
        return ("raises", type(e).__name__, _OBJECT.sub("<object>", str(e)))


def make_env(tf):
    return {"s": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
            "s2": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
            "o": tf.distribute.OneDeviceStrategy("/cpu:0")}


def _rid(tf):
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def _ridf(tf):
    return tf.cast(_rid(tf), tf.float32)


# -- run and its results --------------------------------------------------------------------------

@scenario()
def run_results(tf, env, fn):
    s = env["s"]
    c = tf.constant(5.0)
    return fn(lambda: (s.run(lambda: _rid(tf)),
                       s.run(lambda: {"a": _ridf(tf) + 1.0, "b": [_ridf(tf) * 2.0, (c,)]}),
                       s.run(lambda: c), s.run(lambda: None)))()


@scenario()
def run_args(tf, env, fn):
    s = env["s"]
    per_replica = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([1.0, 2.0]) * float(ctx.replica_id_in_sync_group + 1))
    return fn(lambda: s.run(lambda x, y, scale=1.0: (x * y * scale, tf.distribute.get_replica_context().num_replicas_in_sync),
                            args=[per_replica, tf.constant(3.0)], kwargs={"scale": tf.constant(2.0)}))()


@scenario()
def run_tf_function(tf, env, fn):
    s = env["s"]

    @tf.function
    def step(x):
        return tf.distribute.get_replica_context().all_reduce("SUM", x * x) + _ridf(tf)

    per_replica = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([1.0, 2.0]) * float(ctx.replica_id_in_sync_group + 1))
    return fn(lambda: s.run(step, args=(per_replica,)))()


@scenario()
def reduce_values(tf, env, fn):
    s = env["s"]

    def step():
        v = s.run(lambda: tf.reshape(tf.range(6.0), [2, 3]) * (_ridf(tf) + 1.0))
        return (s.reduce("SUM", v, axis=None), s.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None),
                s.reduce("sum", v, axis=0), s.reduce("MEAN", v, axis=1), s.reduce("MEAN", v, axis=(0, 1)),
                s.reduce("MEAN", tf.constant([1.0, 3.0]), axis=None))
    return fn(step)()


@scenario()
def reduce_nested_and_local_results(tf, env, fn):
    s = env["s"]

    def step():
        v = s.run(lambda: (_ridf(tf), {"a": [_ridf(tf) * 2.0]}))
        return s.reduce("SUM", v, axis=None), s.experimental_local_results(v)
    return fn(step)()


@scenario(eager_only=True)
def local_results_of_plain_values(tf, env, fn):
    s = env["s"]
    c = tf.constant(1.0)
    return s.experimental_local_results(c), s.experimental_local_results([c, {"k": c}])


@scenario()
def reduce_plain_sum_fails(tf, env, fn):
    return fn(lambda: env["s"].reduce("SUM", tf.constant(1.0), axis=None))()


@scenario()
def reduce_unknown_op_string(tf, env, fn):
    return fn(lambda: env["s"].reduce("MAX", env["s"].run(lambda: _ridf(tf)), axis=None))()


@scenario()
def reduce_unknown_op_with_axis(tf, env, fn):
    return fn(lambda: env["s"].reduce(3, env["s"].run(lambda: tf.ones([2]) * _ridf(tf)), axis=0))()


@scenario()
def reduce_unknown_op_without_axis(tf, env, fn):
    return fn(lambda: env["s"].reduce(3, env["s"].run(lambda: _ridf(tf)), axis=None))()


@scenario()
def reduce_axis_out_of_range(tf, env, fn):
    return fn(lambda: env["s"].reduce("SUM", env["s"].run(lambda: tf.ones([2, 3]) * _ridf(tf)), axis=2))()


@scenario(eager_only=True)
def values_from_function(tf, env, fn):
    s = env["s"]
    return (s.experimental_distribute_values_from_function(
        lambda ctx: (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync, str(ctx))),
        s.experimental_distribute_values_from_function(lambda ctx: 7))


# -- merge_call and all_reduce ---------------------------------------------------------------------

@scenario()
def merge_call(tf, env, fn):
    s = env["s"]

    def merge_fn(strategy, value, extra=None):
        return (strategy.reduce("SUM", value, axis=None), extra, tf.distribute.in_cross_replica_context(),
                strategy.num_replicas_in_sync, tf.distribute.get_replica_context() is None, value)

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        return ctx.merge_call(merge_fn, args=(_ridf(tf) + 1.0,), kwargs={"extra": tf.constant(3.0)})
    return fn(lambda: s.run(replica_fn))()


@scenario()
def all_reduce_dense(tf, env, fn):
    s = env["s"]

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        x = tf.constant([1.0, 2.0]) * (_ridf(tf) + 1.0)
        return (ctx.all_reduce("SUM", x), ctx.all_reduce(tf.distribute.ReduceOp.MEAN, {"a": x, "b": [x * 2.0, x[0]]}),
                ctx.all_reduce("MEAN", _rid(tf)), ctx.all_reduce("SUM", tf.constant(2.0)))
    return fn(lambda: s.run(replica_fn))()


@scenario()
def all_reduce_indexed_slices(tf, env, fn):
    s = env["s"]
    with s.scope():
        table = tf.Variable(tf.reshape(tf.range(12.0), [4, 3]))

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.gather(table, tf.stack([_rid(tf), 2])) * (_ridf(tf) + 1.0))
        g = tape.gradient(y, table)
        return g, ctx.all_reduce("SUM", g), ctx.all_reduce("MEAN", [g, tf.ones([2]) * _ridf(tf)])
    return fn(lambda: s.run(replica_fn))()


@scenario()
def all_reduce_gradient(tf, env, fn):
    s = env["s"]

    def replica_fn(op):
        ctx = tf.distribute.get_replica_context()
        x = tf.constant([1.0, 2.0]) * (_ridf(tf) + 1.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = ctx.all_reduce(op, x * x)
            z = tf.reduce_sum(y * (_ridf(tf) + 1.0))
        return tape.gradient(z, x)
    return fn(lambda: (s.run(replica_fn, args=("SUM",)), s.run(replica_fn, args=("MEAN",))))()


@scenario()
def all_gather_and_its_gradient(tf, env, fn):
    s = env["s"]

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        x = tf.ones([2, 3]) * (_ridf(tf) + 1.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            g = ctx.all_gather({"a": x, "b": [x * 2.0]}, axis=1)
            z = tf.reduce_sum(g["a"] * tf.reshape(tf.range(12.0), [2, 6])) + tf.reduce_sum(g["b"][0]) * _ridf(tf)
        return g, tape.gradient(z, x)
    return fn(lambda: s.run(replica_fn))()


@scenario()
def all_reduce_unknown_op(tf, env, fn):
    return fn(lambda: env["s"].run(lambda: tf.distribute.get_replica_context().all_reduce("MAX", _ridf(tf))))()


@scenario()
def replica_context_properties(tf, env, fn):
    s = env["s"]

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        return (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync, ctx.strategy is s,
                tf.distribute.in_cross_replica_context(), tf.distribute.get_strategy() is s, tf.distribute.has_strategy())
    return fn(lambda: s.run(replica_fn))()


# -- mirrored variables -------------------------------------------------------------------------------

def _aggregated_variables(tf, s):
    with s.scope():
        return [tf.Variable(2.0, aggregation=a) for a in (
            tf.VariableAggregation.NONE, tf.VariableAggregation.SUM, tf.VariableAggregation.MEAN,
            tf.VariableAggregation.ONLY_FIRST_REPLICA)]


@scenario()
def mirrored_variable_updates_in_replicas(tf, env, fn):
    s = env["s"]
    variables = _aggregated_variables(tf, s)

    def step():
        return [s.run(lambda v=v: v.assign_add(_ridf(tf) + 1.0)) for v in variables]
    fn(step)()
    fn(lambda: s.run(lambda: variables[2].assign_sub(_ridf(tf))))()
    return [v.values for v in variables]


@scenario()
def mirrored_variable_assign_in_replicas(tf, env, fn):
    s = env["s"]
    variables = _aggregated_variables(tf, s)
    fn(lambda: [s.run(lambda v=v: v.assign(_ridf(tf) * 4.0)) for v in variables])()
    return [v.values for v in variables]


@scenario()
def mirrored_variable_cross_replica(tf, env, fn):
    s = env["s"]
    variables = _aggregated_variables(tf, s)

    def step():
        variables[0].assign(5.0)
        with s.scope():
            variables[1].assign_add(1.0)
        return variables[2].assign_sub(0.5), s.run(lambda: variables[0] * 2.0)
    return fn(step)(), [v.values for v in variables], variables[1].aggregation.name, variables[1].synchronization.name


@scenario(eager_only=True)
def mirrored_variable_reads(tf, env, fn):
    s = env["s"]
    with s.scope():
        v = tf.Variable([1.0, 2.0], name="w")
    return (v, v.read_value(), v.value(), tf.convert_to_tensor(v), v * 2.0, v.numpy(), v.name,
            [c.name for c in v.values], v.trainable, v.shape.as_list(), v.dtype.name,
            s.extended.variable_created_in_scope(v), env["s2"].extended.variable_created_in_scope(v),
            s.extended.value_container(v.values[1]) is v, s.experimental_local_results(v))


@scenario()
def extended_update(tf, env, fn):
    s = env["s"]
    with s.scope():
        v = tf.Variable(1.0)
    per_replica = s.experimental_distribute_values_from_function(lambda ctx: float(ctx.replica_id_in_sync_group))

    def step():
        a = s.extended.update(v, lambda var, x: var.assign_add(x), args=(per_replica,))
        b = s.extended.update(v, lambda var: var.assign_add(1.0), group=False)
        return a, b
    fn(step)()
    return v.values


@scenario()
def extended_update_in_merge_call(tf, env, fn):
    s = env["s"]
    with s.scope():
        v = tf.Variable(0.0)

    def merge_fn(strategy, value, var):
        reduced = strategy.extended.reduce_to("SUM", value, destinations=var)
        return strategy.extended.update(var, lambda var, x: var.assign(x), args=(reduced,))

    fn(lambda: s.run(lambda: tf.distribute.get_replica_context().merge_call(
        merge_fn, args=(_ridf(tf) + 1.0, v))))()
    return v.values


@scenario()
def reduce_to_and_batch_reduce_to(tf, env, fn):
    s = env["s"]
    with s.scope():
        v = tf.Variable(0.0)

    def step():
        pr = s.run(lambda: _ridf(tf) + 1.0)
        return (s.extended.reduce_to("SUM", pr, v), s.extended.reduce_to("MEAN", pr, "/cpu:0"),
                s.extended.batch_reduce_to("SUM", [(pr, v), (pr, "/cpu:0")]))
    return fn(step)()


@scenario(eager_only=True)
def sync_on_read_variable(tf, env, fn):
    s = env["s"]
    with s.scope():
        v = tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)
        m = tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.MEAN)
    s.run(lambda: (v.assign_add(_ridf(tf) + 1.0), m.assign(_ridf(tf) * 4.0)))
    reads = (v.read_value(), m.read_value(), s.run(lambda: v.read_value()), v.trainable, type(v).__name__)
    v.assign(10.0)
    return reads, v.values, m.values


# -- the default strategy and OneDeviceStrategy -----------------------------------------------------

@scenario()
def default_strategy(tf, env, fn):
    def step():
        ctx = tf.distribute.get_replica_context()
        strategy = tf.distribute.get_strategy()
        return (ctx is not None, ctx.num_replicas_in_sync, tf.distribute.has_strategy(),
                tf.distribute.in_cross_replica_context(), strategy.num_replicas_in_sync,
                ctx.merge_call(lambda st, x: (x, tf.distribute.in_cross_replica_context()), args=(tf.constant(1.0),)),
                ctx.all_reduce("SUM", [tf.constant(1.0), tf.constant([2.0])]),
                strategy.run(lambda x: x + 1.0, args=(tf.constant(1.0),)),
                strategy.reduce("SUM", tf.constant([1.0, 2.0]), axis=0),
                strategy.reduce("SUM", tf.constant([1.0, 2.0]), axis=None),
                strategy.experimental_local_results(tf.constant(3.0)),
                strategy.extended.reduce_to("SUM", tf.constant(1.0), "/cpu:0"))
    return fn(step)()


@scenario(eager_only=True)
def default_strategy_variables(tf, env, fn):
    strategy = tf.distribute.get_strategy()
    v = tf.Variable(1.0)
    return (strategy.extended.update(v, lambda var, x: var.assign_add(x), args=(1.0,)),
            strategy.extended.variable_created_in_scope(v),
            strategy.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group))


@scenario()
def one_device_strategy(tf, env, fn):
    o = env["o"]
    with o.scope():
        v = tf.Variable(1.0, aggregation=tf.VariableAggregation.SUM)

    def step():
        return (o.run(lambda x: (x + 1.0, _rid(tf), tf.distribute.in_cross_replica_context()), args=(tf.constant(1.0),)),
                o.run(lambda: v.assign_add(2.0)),
                o.run(lambda: tf.distribute.get_replica_context().merge_call(
                    lambda st, a: (a, tf.distribute.in_cross_replica_context()), args=(tf.constant(1.0),))),
                o.run(lambda: tf.distribute.get_replica_context().all_reduce("MEAN", {"a": tf.constant(3.0)})),
                o.reduce("SUM", tf.constant([1.0, 2.0]), axis=0), o.reduce("MEAN", tf.constant([1.0, 2.0]), axis=None),
                o.experimental_local_results(tf.constant(1.0)), o.num_replicas_in_sync,
                o.extended.update(v, lambda var, x: var.assign_add(x), args=(1.0,)))
    return fn(step)(), v, o.extended.variable_created_in_scope(v), o.extended.worker_devices


# -- misuse ------------------------------------------------------------------------------------------

@scenario()
def nested_run(tf, env, fn):
    s = env["s"]
    return fn(lambda: s.run(lambda: s.run(lambda: tf.constant(1.0))))()


@scenario()
def nested_run_of_another_strategy(tf, env, fn):
    return fn(lambda: env["s"].run(lambda: env["s2"].run(lambda: tf.constant(1.0))))()


@scenario(eager_only=True)
def nested_scopes_of_two_strategies(tf, env, fn):
    with env["s"].scope():
        with env["s2"].scope():
            return 1


@scenario(eager_only=True)
def same_scope_twice(tf, env, fn):
    with env["s"].scope():
        with env["s"].scope():
            return tf.distribute.get_strategy() is env["s"], tf.distribute.in_cross_replica_context()


@scenario()
def scope_inside_run(tf, env, fn):
    s = env["s"]

    def replica_fn():
        with s.scope():
            return tf.constant(1.0)
    return fn(lambda: s.run(replica_fn))()


@scenario()
def reduce_in_replica_context(tf, env, fn):
    s = env["s"]
    return fn(lambda: s.run(lambda: s.reduce("SUM", _ridf(tf), axis=None)))()


@scenario(eager_only=True)
def merge_call_outside_run(tf, env, fn):
    contexts = []
    env["s"].run(lambda: contexts.append(tf.distribute.get_replica_context()))
    return contexts[0].merge_call(lambda strategy: 1)


@scenario(eager_only=True)
def merge_call_in_cross_replica_context(tf, env, fn):
    contexts = []
    env["s"].run(lambda: contexts.append(tf.distribute.get_replica_context()))
    with env["s"].scope():
        return contexts[0].merge_call(lambda strategy: 1)


@scenario(eager_only=True)
def all_reduce_in_cross_replica_context(tf, env, fn):
    contexts = []
    env["s"].run(lambda: contexts.append(tf.distribute.get_replica_context()))
    with env["s"].scope():
        return contexts[0].all_reduce("SUM", tf.constant(1.0))


@scenario()
def merge_call_counts_differ(tf, env, fn):
    s = env["s"]

    def replica_fn(rid):
        if rid == 1:
            return tf.constant(1.0)
        return tf.distribute.get_replica_context().merge_call(lambda strategy: tf.constant(2.0))
    per_replica = s.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group)
    return fn(lambda: s.run(replica_fn, args=(per_replica,)))()


@scenario()
def exception_in_one_replica(tf, env, fn):
    s = env["s"]

    def replica_fn(rid):
        if rid == 1:
            raise KeyError("boom")
        return tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0) * 2.0)
    per_replica = s.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group)
    try:
        fn(lambda: s.run(replica_fn, args=(per_replica,)))()
    except Exception as e:  # noqa: BLE001 -- eagerly the KeyError itself, in a function wrapped by AutoGraph
        return "raised", isinstance(e, KeyError) or fn is tf.function, "boom" in str(e)
    return "returned"


@scenario(eager_only=True)
def variable_of_another_strategy(tf, env, fn):
    with env["s"].scope():
        v = tf.Variable(1.0)
    return env["s2"].run(lambda: v.assign_add(1.0))


@scenario(eager_only=True)
def mean_aggregation_of_integers(tf, env, fn):
    with env["s"].scope():
        return tf.Variable(1, aggregation=tf.VariableAggregation.MEAN)


@scenario(eager_only=True)
def synchronization_none_under_strategy(tf, env, fn):
    with env["s"].scope():
        return tf.Variable(1.0, synchronization=tf.VariableSynchronization.NONE)


@scenario(eager_only=True)
def reduce_op_of_aggregations(tf, env, fn):
    results = [tf.distribute.ReduceOp.from_variable_aggregation(a).value
               for a in (tf.VariableAggregation.SUM, tf.VariableAggregation.MEAN)]
    try:
        tf.distribute.ReduceOp.from_variable_aggregation(tf.VariableAggregation.NONE)
    except ValueError as e:
        results.append(str(e))
    return results, tf.distribute.ReduceOp("SUM").name, str(tf.distribute.ReduceOp.MEAN)


@scenario(eager_only=True)
def update_with_python_value_sum(tf, env, fn):
    with env["s"].scope():
        v = tf.Variable(1, aggregation=tf.VariableAggregation.SUM)
    return env["s"].run(lambda: v.assign_add(1))


# -- losses and optimizers ------------------------------------------------------------------------------

@scenario()
def average_losses(tf, env, fn):
    s = env["s"]

    def replica_fn():
        loss = tf.constant([1.0, 2.0, 3.0]) * (_ridf(tf) + 1.0)
        return (tf.nn.compute_average_loss(loss), tf.nn.compute_average_loss(loss, global_batch_size=4),
                tf.nn.compute_average_loss(tf.constant([[1.0, 2.0], [3.0, 4.0]]), sample_weight=tf.constant([1.0, 0.0])),
                tf.nn.scale_regularization_loss(tf.constant([1.0, 3.0])))
    return fn(lambda: (s.run(replica_fn), tf.nn.compute_average_loss(tf.constant([1.0, 2.0, 3.0]))))()


@scenario(eager_only=True)
def average_loss_in_cross_replica_context(tf, env, fn):
    with env["s"].scope():
        return tf.nn.compute_average_loss(tf.constant([1.0, 2.0]))


def _train(tf, s, make_optimizer, fn, optimizer_in_scope=True):
    rng = np.random.RandomState(0)
    w0, x = rng.randn(3, 2).astype(np.float32), rng.randn(4, 3).astype(np.float32)
    e0, ids = rng.randn(5, 2).astype(np.float32), np.array([0, 2, 2, 4], np.int32)
    opt = None if optimizer_in_scope else make_optimizer()
    with s.scope():
        w, e = tf.Variable(w0), tf.Variable(e0)
        opt = opt or make_optimizer()
        if fn is tf.function:       # slots made before tracing (eagerly: by the first step, in a replica)
            opt.build([w, e])

    def replica_fn(xs, idx):
        with tf.GradientTape() as tape:
            loss = (tf.reduce_sum(tf.tanh(xs @ w)) + tf.reduce_sum(tf.gather(e, idx) ** 2)) / 4.0
        grads = tape.gradient(loss, [w, e])
        opt.apply_gradients(zip(grads, [w, e]))
        return loss

    xs = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(x[2 * ctx.replica_id_in_sync_group:][:2]))
    idx = s.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(ids[2 * ctx.replica_id_in_sync_group:][:2]))
    step = fn(lambda a, b: s.run(replica_fn, args=(a, b)))
    losses = [step(xs, idx) for _ in range(2)]
    return losses, w.values, e.values, opt.iterations.numpy(), [v.numpy() for v in opt.variables]


@scenario()
def keras_sgd_momentum(tf, env, fn):
    return _train(tf, env["s"], lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9), fn)


@scenario()
def keras_adam(tf, env, fn):
    return _train(tf, env["s"], lambda: tf.keras.optimizers.Adam(0.1), fn)


@scenario(eager_only=True)
def keras_optimizer_made_outside_scope(tf, env, fn):
    return _train(tf, env["s"], lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9), fn, optimizer_in_scope=False)
