"""linalg_ops (being written)."""

__all__ = []
