"""AutoGraph: Python `if`/`while`/`for` on tensors inside `tf.function` become
`cond`/`while_loop` (a source transformation, cached per function).

lowering.py (jumps into flags) -> analysis.py (live and defined variables) ->
transformer.py (statements into operator calls) -> conversion.py (source,
compilation, cache, errors); operators.py and loops.py run in converted code.
"""

from tapeflow.graph.autograph import api, conversion  # noqa: F401
