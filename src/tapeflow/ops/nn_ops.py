"""nn_ops (being written)."""

__all__ = []
