"""`tf.types.experimental` and `tf.errors.OperatorNotAllowedInGraphError`, as TensorFlow's."""

import numpy as np
import pytest

from differential import same


def test_function_types_and_tensor_like():
    def prog(tf):
        f = tf.function(lambda x: x * 2.0)
        concrete = f.get_concrete_function(tf.TensorSpec([2], tf.float32))
        return (isinstance(f, tf.types.experimental.GenericFunction),
                isinstance(f, tf.types.experimental.PolymorphicFunction),
                isinstance(concrete, tf.types.experimental.ConcreteFunction),
                isinstance(concrete, tf.types.experimental.Callable),
                tf.types.experimental.TensorLike is not None)
    same(prog)


@pytest.mark.parametrize("where", ["graph", "vectorized"])
def test_bool_of_a_graph_tensor(where):
    def prog(tf):
        def f(x):
            if x > 0:
                return x
            return -x
        try:
            if where == "graph":
                tf.function(f, autograph=False)(tf.constant(1.0))
            else:
                tf.vectorized_map(f, tf.constant(np.ones(2, np.float32)))
        except tf.errors.OperatorNotAllowedInGraphError as e:
            return isinstance(e, TypeError)
        return "no error"
    if where == "graph":
        same(prog)
    else:       # TensorFlow converts fn with AutoGraph; tapeflow's vectorized_map runs it as is
        import tapeflow
        assert prog(tapeflow) is True
