"""`tf.config`: runtime settings.

The settings live in `framework/context.py` (`settings`), below every layer that
reads them; the functions here are the public way to change and read them.
Exports of `config.*` made elsewhere are imported before `populate` at the end.
"""

from tapeflow.framework.context import settings
from tapeflow.framework.export import populate as _populate, tf_export


# -- tf.function ---------------------------------------------------------------------------

@tf_export("config.run_functions_eagerly", "config.experimental_run_functions_eagerly")
def run_functions_eagerly(run_eagerly):
    """Makes every `tf.function` call its Python function directly (True) or trace it (False).

    A setting of the whole process, as TensorFlow's, for debugging: inside the
    function Python `print`, breakpoints and `.numpy()` then work, and `tf.print`
    prints at once.

    Args:
      run_eagerly: whether functions run eagerly (converted with `bool`).

    >>> import tapeflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x.numpy() * 2        # a NumPy value: only possible eagerly
    >>> tf.config.run_functions_eagerly(True)
    >>> f(tf.constant(2.0))
    np.float32(4.0)
    >>> tf.config.run_functions_eagerly(False)
    """
    settings.functions_run_eagerly = bool(run_eagerly)


@tf_export("config.functions_run_eagerly", "config.experimental_functions_run_eagerly")
def functions_run_eagerly():
    """Whether `tf.function`s run eagerly (`run_functions_eagerly`).

    Returns:
      A bool, False unless `run_functions_eagerly(True)` was called.

    >>> import tapeflow as tf
    >>> tf.config.functions_run_eagerly()
    False
    """
    return settings.functions_run_eagerly


# -- devices and threads -------------------------------------------------------------------
# (the distribution issue's part of tf.config: physical and logical devices, threading)


_populate(__name__)
