"""`tf.compat.v1`, differential against TensorFlow: the TF2 names TensorFlow also exports
there (from the one list, Note [compat.v1 names]), v1 signatures (Note [v1 signatures]),
the v1 functions that differ from TF2's, TF1 graphs with `get_variable` and
`variable_scope`, initializers, sessions, and whole TF1 programs run after
`disable_eager_execution()` (in subprocesses: the switch is process-wide)."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapeflow
from tapeflow.framework import export
from differential import Raised, compare, run, same
from op_harness import HAVE_TF, tf_module

ROOT = pathlib.Path(__file__).resolve().parent.parent
V1_API = pathlib.Path(tapeflow.__file__).parent / "framework" / "tf_v1_api.txt"


def _rows():
    """(v1 name, kind, TF2 names) per line of the v1 list."""
    rows = []
    for line in V1_API.read_text().splitlines():
        if not line.startswith("#"):
            name, kind, *rest = line.split(" ", 3)
            rows.append((name, kind, rest[0].split("|") if rest else []))
    return rows


def _get(module, path):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


# -- the names -------------------------------------------------------------------------

def test_names_of_the_issue_are_there():
    v1 = tapeflow.compat.v1
    for name in ("constant", "function", "convert_to_tensor", "matmul", "GradientTape", "custom_gradient",
                 "float32", "Variable", "placeholder", "Session", "InteractiveSession", "get_variable",
                 "variable_scope", "AUTO_REUSE", "disable_eager_execution", "enable_eager_execution",
                 "executing_eagerly", "enable_tensor_equality", "disable_tensor_equality",
                 "placeholder_with_default", "global_variables_initializer", "local_variables_initializer",
                 "trainable_variables", "global_variables", "zeros_initializer", "glorot_uniform_initializer"):
        assert _get(v1, name) is not None, name
    assert v1.matmul is tapeflow.matmul and v1.float32 is tapeflow.float32 and v1.function is tapeflow.function
    assert v1.nn.relu is tapeflow.nn.relu and v1.math.exp is tapeflow.math.exp and v1.linalg.inv is tapeflow.linalg.inv
    assert v1.random_normal is tapeflow.random.normal and v1.log is tapeflow.math.log


def test_every_tf2_name_that_tensorflow_also_exports_is_in_compat_v1():
    for name, kind, tf2_names in _rows():
        if kind == "!":
            continue
        ours = [o for o in (_get(tapeflow, n) for n in tf2_names) if o is not None]
        if not ours:
            continue                    # tapeflow has no TF2 version of it
        v1 = _get(tapeflow.compat.v1, name)
        assert v1 is not None, f"tf.compat.v1.{name} is missing (TF2 {tf2_names[0]})"
        if kind == "=":
            assert v1 is ours[0], f"tf.compat.v1.{name} is not tf.{tf2_names[0]}"


def test_explicit_v1_names_are_tensorflows():
    names = {name for name, _, _ in _rows()}
    prefixes = {n.rsplit(".", 1)[0] for n in names if "." in n}
    for namespace, table in export._EXPORTS.items():
        if namespace != "compat.v1" and not namespace.startswith("compat.v1."):
            continue
        for attr in table:
            if (namespace, attr) in export._DERIVED:
                continue
            path = f"{namespace[len('compat.v1.'):]}.{attr}" if namespace != "compat.v1" else attr
            assert path in names or path in prefixes, f"tf.compat.v1.{path} is not in TensorFlow's v1 API"


def test_the_list_is_tensorflows():
    """tf_v1_api.txt is what tools/generate_tf_v1_api.py writes for the installed TensorFlow
    (when it is the version the file was written from)."""
    tf = tf_module()
    header = V1_API.read_text().splitlines()[0]
    if f"TensorFlow {tf.__version__}'s" not in header:
        pytest.skip(f"the list is from another TensorFlow ({header})")
    # In a fresh interpreter: modules imported by other tests (tf_keras) change what TensorFlow's
    # namespaces show.
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('g', sys.argv[1]); "
            "g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g); sys.stdout.write(g.generate())")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "tools" / "generate_tf_v1_api.py")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == V1_API.read_text()


def test_v1_modules_follow_later_exports():
    export.tf_export("math.__test_late_export")(len)
    try:
        assert tapeflow.math.__test_late_export is len
    finally:
        del export._EXPORTS["math"]["__test_late_export"]
        delattr(tapeflow.math, "__test_late_export")


# -- v1 signatures (Note [v1 signatures]) -------------------------------------------------

X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)

V1_CALLS = {
    "reduce_sum_reduction_indices": lambda v1: v1.reduce_sum(X, reduction_indices=1, keep_dims=True),
    "reduce_mean_axis": lambda v1: v1.reduce_mean(X, 0),
    "reduce_max_positional_name": lambda v1: v1.reduce_max(X, 1, True, "m"),
    "reduce_sum_both_axes": lambda v1: v1.reduce_sum(X, axis=1, reduction_indices=1),
    "argmax_dimension": lambda v1: v1.argmax(X, dimension=1),
    "argmax_positional": lambda v1: v1.argmax(X, 1, "a", None, v1.int32),
    "expand_dims_dim": lambda v1: v1.expand_dims([1, 2], dim=0),
    "squeeze_dims": lambda v1: v1.squeeze([[1.0], [2.0]], squeeze_dims=[1]),
    "softmax_dim": lambda v1: v1.nn.softmax(X, dim=0),
    "log_softmax_dim": lambda v1: v1.nn.log_softmax(X, dim=-1),
    "convert_preferred": lambda v1: v1.convert_to_tensor(1, preferred_dtype=v1.float32),
    "shape_positional_name": lambda v1: v1.shape(X, "s", v1.int64),
    "transpose_name": lambda v1: v1.transpose(X, [1, 0], "t"),
    "pad_name_then_value": lambda v1: v1.pad(X, [[1, 0], [0, 1]], "CONSTANT", None, 7.0),
    "gather_axis_after_name": lambda v1: v1.gather(X, [2, 0], None, None, 1),
    "norm_keep_dims": lambda v1: v1.norm(X, keep_dims=True),
    "moments_keep_dims": lambda v1: v1.nn.moments(X, [0], keep_dims=True),
    "ones_like_tensor": lambda v1: v1.ones_like(tensor=X),
    "boolean_mask_positional": lambda v1: v1.boolean_mask(X, [True, False], "bm", 0),
    "conv2d_filter": lambda v1: v1.nn.conv2d(np.ones([1, 3, 3, 1], np.float32), filter=np.ones([2, 2, 1, 1], np.float32),
                                             strides=[1, 1, 1, 1], padding="VALID", use_cudnn_on_gpu=True),
    "max_pool_value": lambda v1: v1.nn.max_pool(value=np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1),
                                                ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
    "random_normal_alias_seeded": lambda v1: v1.random_normal([2]).shape,
    "matmul_same": lambda v1: v1.matmul(X, X, transpose_b=True),
}


@pytest.mark.parametrize("name", sorted(V1_CALLS))
def test_v1_signature(name):
    same(lambda tf: V1_CALLS[name](tf.compat.v1))


def test_v1_argument_tapeflow_lacks_names_it():
    with pytest.raises(TypeError, match="verify_shape"):
        tapeflow.compat.v1.constant([1.0], verify_shape=True)
    assert float(tapeflow.compat.v1.constant(1.0, verify_shape=False)) == 1.0      # the v1 default: dropped


# -- v1 functions that differ from TF2's ----------------------------------------------------

def _labels_gradient(tf, v1):
    labels, logits = tf.constant([[0.2, 0.8]]), tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(labels)
        fn = tf.compat.v1.nn.softmax_cross_entropy_with_logits if v1 else tf.nn.softmax_cross_entropy_with_logits
        loss = fn(labels=labels, logits=logits)
    return loss, tape.gradient(loss, labels)


V1_FUNCTIONS = {
    "cond_unpacks_singleton": lambda tf: tf.compat.v1.cond(tf.constant(True), lambda: [tf.constant(1)],
                                                           lambda: [tf.constant(2)]),
    "cond_strict": lambda tf: tf.compat.v1.cond(tf.constant(True), lambda: [tf.constant(1)],
                                                lambda: [tf.constant(2)], strict=True),
    "cond_fn1_fn2": lambda tf: tf.compat.v1.cond(tf.constant(False), fn1=lambda: 1.0, fn2=lambda: 2.0),
    "while_one_variable_bare": lambda tf: tf.compat.v1.while_loop(lambda i: i < 3, lambda i: i + 1,
                                                                  [tf.constant(0)]),
    "while_two_variables": lambda tf: tf.compat.v1.while_loop(lambda i, j: i < 3, lambda i, j: [i + 1, j * 2],
                                                              [tf.constant(0), tf.constant(1.0)]),
    "dropout_keep_prob": lambda tf: tf.compat.v1.nn.dropout(tf.ones([4]), keep_prob=1.0),
    "dropout_positional_keep_prob": lambda tf: tf.compat.v1.nn.dropout(tf.ones([4]), 1.0),
    "dropout_both": lambda tf: tf.compat.v1.nn.dropout(tf.ones([4]), keep_prob=0.5, rate=0.5),
    "dropout_neither": lambda tf: tf.compat.v1.nn.dropout(tf.ones([4])),
    "sce_v1_no_label_gradient": lambda tf: _labels_gradient(tf, True),
    "sce_v2_label_gradient": lambda tf: _labels_gradient(tf, False),
    "sce_v1_dim": lambda tf: tf.compat.v1.nn.softmax_cross_entropy_with_logits(labels=[[0., 1.]], logits=[[1., 2.]],
                                                                               dim=-1),
    "sce_with_logits_v2": lambda tf: tf.compat.v1.nn.softmax_cross_entropy_with_logits_v2([[0., 1.]], [[1., 2.]]),
    "where_rows": lambda tf: tf.compat.v1.where([True, False], [[1, 2], [3, 4]], [[5, 6], [7, 8]]),
    "where_same_shape": lambda tf: tf.compat.v1.where([[True, False]], [[1, 2]], [[5, 6]]),
    "where_no_broadcast": lambda tf: tf.compat.v1.where([True, False], [1, 2], 5),
    "where_shapes_differ": lambda tf: tf.compat.v1.where([[True, False]], [[1, 2]], [[5, 6], [7, 8]]),
    "where_indices": lambda tf: tf.compat.v1.where([True, False, True]),
    "to_float": lambda tf: tf.compat.v1.to_float(tf.constant([1, 2])),
    "to_int32": lambda tf: tf.compat.v1.to_int32(tf.constant([1.5, -2.5])),
    "to_double": lambda tf: tf.compat.v1.to_double(tf.constant([1, 2])),
    "assign_add": lambda tf: tf.compat.v1.assign_add(tf.Variable(1.0), 2.0).numpy(),
    "group_and_no_op_eagerly": lambda tf: (tf.group(tf.constant(1.0)), tf.no_op()),
    "global_variables_initializer_eagerly": lambda tf: tf.compat.v1.global_variables_initializer(),
    "executing_eagerly_outside_functions": lambda tf: tf.compat.v1.executing_eagerly_outside_functions(),
}


@pytest.mark.parametrize("name", sorted(V1_FUNCTIONS))
def test_v1_function(name):
    same(V1_FUNCTIONS[name])


# -- TF1 graphs: variable scopes, initializers, sessions ---------------------------------

def _in_graph(body):
    """A program running `body(v1, tf)` while a new graph is the default."""
    def program(tf):
        with tf.Graph().as_default():
            return body(tf.compat.v1, tf)
    return program


def _layer(v1, name, reuse=None, shape=(2, 3), **kwargs):
    with v1.variable_scope(name, reuse=reuse):
        return v1.get_variable("w", shape, **kwargs)


GRAPHS = {
    "names_and_sharing": lambda v1, tf: (
        _layer(v1, "layer").name, _layer(v1, "layer", reuse=True).name,
        _layer(v1, "layer", reuse=True) is v1.trainable_variables()[0]),
    "make_existing_raises": lambda v1, tf: (_layer(v1, "layer"), _layer(v1, "layer")),
    "make_existing_top_level_raises": lambda v1, tf: (_layer(v1, "layer"), v1.get_variable("layer/w", [2, 3])),
    "reuse_missing_raises": lambda v1, tf: _layer(v1, "other", reuse=True),
    "reuse_other_shape_raises": lambda v1, tf: (_layer(v1, "layer"), _layer(v1, "layer", True, (3, 3))),
    "reuse_other_dtype_raises": lambda v1, tf: (_layer(v1, "layer"), _layer(v1, "layer", True, dtype=tf.float64)),
    "reuse_without_shape": lambda v1, tf: (_layer(v1, "layer").name, _layer(v1, "layer", True, None).shape),
    "auto_reuse": lambda v1, tf: [(_layer(v1, "l", v1.AUTO_REUSE).name, len(v1.global_variables()))
                                  for _ in range(2)],
    "reuse_inherited": lambda v1, tf: _nested_reuse(v1),
    "default_names_unique": lambda v1, tf: _default_names(v1),
    "scope_object_reentered": lambda v1, tf: _reentered(v1, tf),
    "name_scopes_of_ops": lambda v1, tf: _op_names(v1, tf),
    "no_shape_raises": lambda v1, tf: v1.get_variable("v"),
    "value_initializer": lambda v1, tf: _initialized(v1, v1.get_variable("v", initializer=tf.constant([1.0, 2.0]))),
    "value_initializer_with_shape_raises": lambda v1, tf: v1.get_variable("v", [2], initializer=tf.constant([1., 2.])),
    "value_initializer_other_dtype_raises": lambda v1, tf: v1.get_variable("v", initializer=tf.constant([1, 2]),
                                                                           dtype=tf.float32),
    "python_value_initializer": lambda v1, tf: _initialized(v1, v1.get_variable("v", initializer=3.0)),
    "initializers": lambda v1, tf: _initialized(v1, *[
        v1.get_variable(f"v{i}", [2, 2], dtype=d, initializer=init) for i, (init, d) in enumerate([
            (v1.zeros_initializer(), tf.float32), (v1.ones_initializer(), tf.float64),
            (v1.constant_initializer([1, 2, 3, 4]), tf.float32), (v1.constant_initializer(5), tf.int32),
            (v1.ones_initializer, tf.float32), (v1.initializers.zeros(), tf.float32)])]),
    "integer_default_initializer": lambda v1, tf: _initialized(v1, v1.get_variable("i", [3], dtype=tf.int32)),
    "scope_initializer_and_dtype": lambda v1, tf: _scope_defaults(v1, tf),
    "trainable_false": lambda v1, tf: (v1.get_variable("a", [1], trainable=False).name,
                                       [v.name for v in v1.trainable_variables()],
                                       [v.name for v in v1.global_variables()]),
    "get_variable_after_variable": lambda v1, tf: (tf.Variable(1.0, name="plain").name,
                                                   v1.get_variable("plain", []).name),
    "placeholder_with_default": lambda v1, tf: _placeholder_with_default(v1, tf),
    "initializer_ops_run": lambda v1, tf: _initializer_ops(v1, tf),
    "sessions_as_default": lambda v1, tf: _default_sessions(v1, tf),
    "eval_without_session_raises": lambda v1, tf: tf.constant(1.0).eval(),
    "run_without_session_raises": lambda v1, tf: tf.no_op().run(),
    "interactive_session": lambda v1, tf: _interactive(v1, tf),
    "group_in_graph": lambda v1, tf: _group(v1, tf),
    "tensor_identity_in_graphs": lambda v1, tf: _identity_equality(v1, tf),
    "default_graph_and_eager_flags": lambda v1, tf: (v1.get_default_graph() is not None, tf.executing_eagerly(),
                                                     v1.executing_eagerly_outside_functions()),
    "v1_functions_in_graph": lambda v1, tf: _graph_v1_functions(v1, tf),
    "collections": lambda v1, tf: _collections(v1, tf),
}


def _collections(v1, tf):
    tf.Variable(1.0, name="a")
    tf.Variable(1.0, name="b", trainable=False)
    with v1.variable_scope("s"):
        v1.get_variable("c", [1])
    keys = v1.GraphKeys
    out = [[x.name for x in v1.get_collection(k, scope)] for k, scope in
           ((keys.GLOBAL_VARIABLES, None), (keys.TRAINABLE_VARIABLES, None), (keys.TRAINABLE_VARIABLES, "s"),
            (keys.UPDATE_OPS, None))]
    v1.add_to_collection("mine", 1)
    v1.add_to_collections(["mine", "other"], 2)
    v1.get_collection_ref("mine").append(3)
    v1.train.get_or_create_global_step()
    out += [v1.get_collection("mine"), v1.get_collection("other"),
            [x.name for x in v1.get_collection(keys.GLOBAL_STEP)], keys.VARIABLES, keys.LOSSES]
    return out


def _initialized(v1, *variables):
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        return [v.name for v in variables], [v.dtype for v in variables], sess.run(list(variables))


def _nested_reuse(v1):
    _layer(v1, "outer/inner")
    with v1.variable_scope("outer", reuse=True):
        with v1.variable_scope("inner", reuse=False):
            scope = v1.get_variable_scope()
            shared = v1.get_variable("w", [2, 3])
    return scope.name, scope.reuse, shared.name, v1.get_variable_scope().reuse


def _default_names(v1):
    names = []
    with v1.variable_scope("block"):
        pass
    for _ in range(3):
        with v1.variable_scope(None, default_name="block"):
            names.append(v1.get_variable("q", [1]).name)
    return names


def _reentered(v1, tf):
    with v1.variable_scope("sc") as scope:
        a = v1.get_variable("a", [1])
    with v1.variable_scope("other"):
        with v1.variable_scope(scope, reuse=True) as again:
            b = v1.get_variable("a", [1])
            op = tf.add(b, 1.0, name="plus")
    return (scope.name, scope.original_name_scope, again.name, again.original_name_scope, a is b, op.name,
            v1.get_variable_scope().name)


def _op_names(v1, tf):
    names = []
    for _ in range(2):
        with v1.variable_scope("dense", reuse=v1.AUTO_REUSE):
            w = v1.get_variable("w", [2, 2])
            with tf.name_scope("inner"):
                v = v1.get_variable("v", [1])
                y = tf.identity(w, name="y")
            names.append((w.name, v.name, y.name))
    return names


def _scope_defaults(v1, tf):
    with v1.variable_scope("s", initializer=v1.constant_initializer(2.0), dtype=tf.float64):
        a = v1.get_variable("a", [2])
        with v1.variable_scope("t"):
            b = v1.get_variable("b", [1])
    return _initialized(v1, a, b)


def _placeholder_with_default(v1, tf):
    x = v1.placeholder_with_default([1.0, 2.0], shape=[None], name="x")
    y = x * 2.0
    with v1.Session() as sess:
        return x.shape, x.name, sess.run(y), sess.run(y, {x: [3.0, 4.0, 5.0]})


def _initializer_ops(v1, tf):
    v = v1.get_variable("v", [2], initializer=v1.ones_initializer())
    inits = [v1.global_variables_initializer(), v1.variables_initializer([v]), v1.local_variables_initializer()]
    sess = v1.Session()
    with sess.as_default():
        for op in inits:
            op.run()
        return [type(op).__name__ for op in inits], [op.type for op in inits], v.eval(), v1.local_variables()


def _default_sessions(v1, tf):
    x = tf.constant([1.0, 2.0]) * 3.0
    out = [v1.get_default_session() is None]
    sess = v1.Session()
    with sess.as_default():
        out += [v1.get_default_session() is sess, x.eval()]
    out.append(v1.get_default_session() is None)
    with v1.Session() as other:
        out += [v1.get_default_session() is other, x.eval(session=sess)]
    return out


def _interactive(v1, tf):
    x = v1.placeholder(tf.float32, [2])
    y = x + 1.0
    first = v1.InteractiveSession()
    second = v1.InteractiveSession()
    out = [v1.get_default_session() is second, y.eval({x: [1.0, 2.0]})]
    second.close()
    out.append(v1.get_default_session() is first)
    first.close()
    out.append(v1.get_default_session() is None)
    out.append(run(lambda _: first.run(y, {x: [0.0, 0.0]}), None))
    return out


def _group(v1, tf):
    v = tf.Variable(1.0)
    step = tf.group(v.assign_add(1.0), [v.assign_add(2.0)], name="step")
    with v1.Session() as sess:
        sess.run(v.initializer)
        sess.run(step)
        return step.name, step.type, sess.run(v), tf.no_op(name="nothing").type


def _identity_equality(v1, tf):
    x = v1.placeholder(tf.float32, [2])
    y = v1.placeholder(tf.float32, [2])
    return x == x, x == y, x != y, isinstance(hash(x), int), {x: 1, y: 2}[y]


def _graph_v1_functions(v1, tf):
    p = v1.placeholder(tf.bool, [2])
    outs = [v1.where(p, [[1, 2], [3, 4]], [[5, 6], [7, 8]]),
            v1.while_loop(lambda i: i < 5, lambda i: i + 2, [tf.constant(0)]),
            v1.cond(p[0], lambda: [tf.constant(1)], lambda: [tf.constant(2)])]
    with v1.Session() as sess:
        return sess.run(outs, {p: [False, True]})


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_tf1_graph(name):
    same(_in_graph(GRAPHS[name]))


def test_where_shape_mismatch_in_graph_is_value_error():
    same(_in_graph(lambda v1, tf: v1.where(v1.placeholder(tf.bool, [2]), [1, 2], 5)))


# -- initializers --------------------------------------------------------------------

INIT_CONFIGS = {
    "zeros": lambda v1: v1.zeros_initializer(),
    "ones": lambda v1: v1.ones_initializer(dtype=v1.int32),
    "constant": lambda v1: v1.constant_initializer(3.0),
    "random_normal": lambda v1: v1.random_normal_initializer(1.0, 2.0, seed=3),
    "truncated_normal": lambda v1: v1.truncated_normal_initializer(stddev=0.5),
    "random_uniform": lambda v1: v1.random_uniform_initializer(-1.0, 1.0),
    "glorot_uniform": lambda v1: v1.glorot_uniform_initializer(seed=1),
    "glorot_normal": lambda v1: v1.glorot_normal_initializer(),
    "variance_scaling": lambda v1: v1.variance_scaling_initializer(2.0, "fan_out", "uniform"),
    "orthogonal": lambda v1: v1.orthogonal_initializer(gain=2.0),
}


@pytest.mark.parametrize("name", sorted(INIT_CONFIGS))
def test_initializer_config(name):
    same(lambda tf: INIT_CONFIGS[name](tf.compat.v1).get_config())


def test_initializer_errors():
    same(lambda tf: tf.compat.v1.variance_scaling_initializer(mode="fan_sideways"))
    same(lambda tf: tf.compat.v1.variance_scaling_initializer(scale=-1.0))
    same(lambda tf: tf.compat.v1.random_normal_initializer(dtype=tf.int32))
    same(lambda tf: tf.compat.v1.orthogonal_initializer()([3]))
    same(lambda tf: tf.compat.v1.constant_initializer([1, 2, 3])([2, 2]))


@pytest.mark.parametrize("shape", [(400, 300), (3, 3, 40, 60)])
def test_random_initializers_have_their_spread(shape):
    v1 = tapeflow.compat.v1
    fan_in, fan_out = (shape[-2] * int(np.prod(shape[:-2])), shape[-1] * int(np.prod(shape[:-2])))
    glorot = v1.glorot_uniform_initializer(seed=1)(shape).numpy()
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    assert glorot.dtype == np.float32 and np.abs(glorot).max() <= limit and np.abs(glorot).max() > 0.95 * limit
    he = v1.variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed=2)(shape).numpy()
    np.testing.assert_allclose(he.std(), np.sqrt(2.0 / fan_in), rtol=0.05)
    assert np.abs(he).max() <= 2 * np.sqrt(2.0 / fan_in) / .87962566103423978 + 1e-6
    normal = v1.random_normal_initializer(1.0, 2.0, seed=3)(shape).numpy()
    np.testing.assert_allclose([normal.mean(), normal.std()], [1.0, 2.0], rtol=0.05, atol=0.03)
    q = v1.orthogonal_initializer(seed=4)((40, 30)).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(30), atol=1e-4)


# -- tensor equality ---------------------------------------------------------------------

def test_tensor_equality_switches():
    def program(tf):
        c, v = tf.constant([1.0, 2.0]), tf.Variable([1.0, 2.0])
        tf.compat.v1.disable_tensor_equality()
        try:
            off = (c == c, c == tf.constant([1.0, 2.0]), c != c, v == v, v == 1.0, isinstance(hash(v), int),
                   run(lambda _: hash(c), None))
        finally:
            tf.compat.v1.enable_tensor_equality()
        on = (c == tf.constant([1.0, 3.0]), v == [1.0, 0.0], run(lambda _: hash(v), None),
              run(lambda _: hash(c), None))
        return off, on
    same(program)


def test_tensor_equality_inside_functions_is_elementwise():
    def program(tf):
        hashed = []

        @tf.function
        def f(x):
            hashed.append(run(lambda _: hash(x), None))
            return x == x
        return f(tf.constant([1.0, float("nan")])), hashed
    same(program)


# -- whole TF1 programs, each in its own process ------------------------------------------

_MLP = """
import json
import numpy as np
import tensorflow.compat.v1 as tf

{switch}
rng = np.random.RandomState(0)
X = rng.randn(32, 4).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int32)
W1 = rng.randn(4, 8).astype(np.float32) * 0.5
W2 = rng.randn(8, 2).astype(np.float32) * 0.5

x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.int32, [None], name="y")
keep = tf.placeholder_with_default(1.0, shape=[], name="keep")


def dense(inp, init, name, act=None):
    with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
        w = tf.get_variable("w", init.shape, initializer=tf.constant_initializer(init))
        b = tf.get_variable("b", [init.shape[1]], initializer=tf.zeros_initializer())
        out = tf.matmul(inp, w) + b
        return act(out) if act else out


def model(inp):
    with tf.variable_scope("mlp"):
        h = tf.nn.dropout(dense(inp, W1, "hidden", tf.nn.relu), keep_prob=keep)
        return dense(h, W2, "logits")


logits = model(x)
with tf.variable_scope("mlp", reuse=True):
    w_again = tf.get_variable("hidden/w")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
accuracy = tf.reduce_mean(tf.to_float(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y)))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.{optimizer}.minimize(loss, global_step=global_step)
init = tf.global_variables_initializer()

out = {{"eager": tf.executing_eagerly(), "names": [v.name for v in tf.trainable_variables()],
       "shared": w_again is tf.trainable_variables()[0], "logits_shape": logits.shape.as_list(),
       "x_is_x": bool(x == x), "losses": []}}
with tf.Session() as sess:
    sess.run(init)
    for step in range(5):
        _, l = sess.run([train_op, loss], feed_dict={{x: X, y: Y}})
        out["losses"].append(float(l))
    out["accuracy"] = float(sess.run(accuracy, {{x: X, y: Y}}))
    out["step"] = int(sess.run(global_step))
    out["w2"] = sess.run(tf.trainable_variables()[2]).tolist()
    out["eval"] = float(loss.eval({{x: X, y: Y}}))
    out["fed_keep"] = float(sess.run(loss, {{x: X, y: Y, keep: 1.0}}))
sess = tf.InteractiveSession()
init.run()
out["fresh_loss"] = float(loss.eval(feed_dict={{x: X, y: Y}}))
sess.close()
graph = tf.get_default_graph()
tf.reset_default_graph()
out["reset"] = tf.get_default_graph() is not graph
try:
    tf.enable_eager_execution()
    out["enable"] = "no error"
except ValueError:
    out["enable"] = "ValueError"
print("RESULT " + json.dumps(out))
"""


def _run_programs(source):
    """The results of `source` run with tapeflow (its import changed) and with TensorFlow, each
    in a process of its own (both at once)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT / "src"))
    codes = {"tapeflow": source.replace("import tensorflow.compat.v1 as tf", "import tapeflow.compat.v1 as tf"),
             "tensorflow": source}
    running = {m: subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env) for m, code in codes.items()}
    results = {}
    for module, process in running.items():
        stdout, stderr = process.communicate(timeout=300)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        assert process.returncode == 0 and lines, f"{module} failed:\n{stderr[-3000:]}"
        results[module] = json.loads(lines[-1][len("RESULT "):])
    return results["tapeflow"], results["tensorflow"]


def _same_results(ours, theirs, path="result"):
    assert type(ours) is type(theirs), f"{path}: {ours!r} vs TensorFlow's {theirs!r}"
    if isinstance(ours, dict):
        assert sorted(ours) == sorted(theirs), path
        for k in ours:
            _same_results(ours[k], theirs[k], f"{path}[{k!r}]")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same_results(a, b, f"{path}[{i}]")
    elif isinstance(ours, float):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=path)
    else:
        assert ours == theirs, f"{path}: {ours!r} vs TensorFlow's {theirs!r}"


@pytest.mark.parametrize("switch, optimizer", [
    ("tf.disable_eager_execution()", "GradientDescentOptimizer(0.5)"),
    ("tf.disable_v2_behavior()", "AdamOptimizer(0.05)"),
    ("tf.disable_eager_execution()", "MomentumOptimizer(0.1, 0.9)"),
])
def test_tf1_program_runs_with_only_the_import_changed(switch, optimizer):
    if not HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    source = textwrap.dedent(_MLP).format(switch=switch, optimizer=optimizer)
    ours, theirs = _run_programs(source)
    assert ours["losses"][-1] < ours["losses"][0]
    _same_results(ours, theirs)


def test_get_variable_eagerly_makes_new_variables():
    def program(tf):
        v1 = tf.compat.v1
        with v1.variable_scope("eager_scope"):
            a = v1.get_variable("v", [2], initializer=v1.zeros_initializer())
            b = v1.get_variable("v", [2], initializer=v1.ones_initializer())
        with v1.variable_scope("eager_scope", reuse=True):
            c = v1.get_variable("v", [2], initializer=v1.ones_initializer())
        return a.name, b.name, c.name, a is b, b.numpy(), c.numpy()
    same(program)


def test_compare_helper_sees_differences():
    with pytest.raises(AssertionError):
        _same_results({"a": [1.0]}, {"a": [1.1]})
    with pytest.raises(AssertionError):
        compare(Raised(ValueError("x")), 1)


def test_v1_cond_in_graphs_follows_the_control_flow_switch():
    def program(tf):
        v1 = tf.compat.v1
        out = []
        for disable in (False, True):
            if disable:
                v1.disable_control_flow_v2()
            try:
                with tf.Graph().as_default():
                    r = v1.cond(tf.constant(True), lambda: [tf.constant(1)], lambda: [tf.constant(2)])
                    out.append((type(r).__name__ == "list", v1.control_flow_v2_enabled()))
            finally:
                v1.enable_control_flow_v2()
        return out
    same(program)
