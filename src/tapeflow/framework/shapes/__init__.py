"""Static shapes: what is known of a tensor's shape and value while a graph is built.

- `abstract_values`: `Meta`, the static shape and dtype standing in for an array;
- `symbolic_tensors`: graph tensors, whose value is a `Meta`, and their rank checks;
- `shape_rules`: the shape functions ops declare (elementwise, broadcasting, reductions, ...);
- `matrix_shape_rules`: the shape functions of the matrix families;
- `known_values`: the partly known values of small graph tensors (sizes computed from shapes).
"""
