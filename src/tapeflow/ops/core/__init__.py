"""The ops core: what every op family declares its ops with and builds its rules on.

Bottom to top (each module imports only the framework and the ones before it):

- `batching`: the batching kinds an op record names (`ELEMENTWISE`, `REDUCTION`, ...),
  `BatchedTensor` and the op-free helpers of batching rules;
- `presets`: the family presets (`unary_op`, `binary_op`, `comparison_op`, `reduction_op`);
- `half`: float16/bfloat16 computed in float32 (Note [half precision]);
- `arguments`: int inputs, attr lists and index checks as TensorFlow takes them;
- `basic_ops`: `shape`, `range`, `cast`, `conj`, `zeros_like`;
- `primitives`: the recursive group the machinery needs: reshaping, broadcasting,
  stacking, `reduce_sum`, size inputs, and the batching and gradient helpers;
- `vectorization`: the driver that runs batching rules (Note [batching rules]).

The families import the core and never the other way (`tests/test_layering.py`).
Applying gradient rules (`ops/gradient_rules.py`) needs `concat` and `add_n` to
aggregate gradients, so it sits above the families it uses.
"""
