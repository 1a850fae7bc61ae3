"""Runnable demos: `python -m tapeflow.examples.NAME`.

- `digits`: trains a small MLP on scikit-learn's bundled digits with
  `GradientTape` and reports held-out accuracy.
"""
