"""`tf.random` (being written)."""
