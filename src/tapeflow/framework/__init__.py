"""The lowest layer: dtypes, tensors, shapes, abstract values, the op record and dispatch, exports,
and the hook points through which the layers above plug into its classes (hooks.py)."""
