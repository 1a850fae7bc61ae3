"""The ops core: what every op family declares its ops with, below all of them.

- `batching`: the batching kinds an op record names (`ELEMENTWISE`, `REDUCTION`, ...),
  `BatchedTensor` and the op-free helpers of batching rules;
- `presets`: the family presets (`unary_op`, `binary_op`, `comparison_op`, `reduction_op`);
- `half`: float16/bfloat16 computed in float32 (Note [half precision]).

It imports the framework only; the families import it and never the other way
(`tests/test_layering.py`).
"""
