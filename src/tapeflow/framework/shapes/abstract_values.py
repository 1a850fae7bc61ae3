"""`Meta`: a tensor's static shape and dtype, the abstract value standing in for its
array (a symbolic tensor's `_value`, and an eager record's stand-in for an input
its gradient does not read)."""


class Meta:
    """The static description standing in for a symbolic tensor's value: `shape` a tuple
    of ints and Nones (unknown dims), or None when the rank is unknown; a NumPy `dtype`."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    @property
    def size(self):
        if self.shape is None:
            return None
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    nbytes = 0      # no array behind it: never worth a stand-in (Note [saved inputs])

    def __array__(self, dtype=None, copy=None):
        # no values: a kernel run on one fails, and the op reports a graph tensor out of its graph
        raise TypeError(f"{self!r} describes a graph tensor and holds no values.")

    def __repr__(self):
        return f"Meta({self.shape}, {self.dtype})"
