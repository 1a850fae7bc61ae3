"""Spec rows for tf.math ops; the harness runs forward, gradient, second order and TF checks."""

import numpy as np

from op_harness import OpSpec, any_real, away_from_zero, complex_of, define_tests, positive

BROADCAST = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((0, 3), (3,)), ((1,), ())]
UNARY = [((3,),), ((),), ((2, 3),), ((0,),), ((1,),)]

SPECS = [
    OpSpec("add", lambda tf, x, y: tf.add(x, y), np.add, BROADCAST),
    OpSpec("subtract", lambda tf, x, y: tf.subtract(x, y), np.subtract, BROADCAST),
    OpSpec("multiply", lambda tf, x, y: tf.multiply(x, y), np.multiply, BROADCAST),
    OpSpec("divide", lambda tf, x, y: tf.divide(x, y), np.divide, BROADCAST, sampler=(any_real, away_from_zero)),
    OpSpec("pow", lambda tf, x, y: tf.pow(x, y), np.power, BROADCAST, sampler=positive),
    OpSpec("exp", lambda tf, x: tf.exp(x), np.exp, UNARY),
    OpSpec("log", lambda tf, x: tf.math.log(x), np.log, UNARY, sampler=positive),
    OpSpec("sin", lambda tf, x: tf.sin(x), np.sin, UNARY),
    OpSpec("tanh", lambda tf, x: tf.tanh(x), np.tanh, UNARY),
    OpSpec("sqrt", lambda tf, x: tf.sqrt(x), np.sqrt, UNARY, sampler=positive),
    OpSpec("reduce_sum", lambda tf, x: tf.reduce_sum(x, axis=1), lambda x: x.sum(1), [((2, 3),), ((0, 3),)]),
    OpSpec("matmul", lambda tf, a, b: tf.matmul(a, b), np.matmul, [((2, 3), (3, 4)), ((2, 2, 3), (3, 1)), ((0, 3), (3, 2))]),
    OpSpec("complex_mul", lambda tf, x, y: x * y, np.multiply, [((3,), (3,))], sampler=complex_of(any_real)),
    OpSpec("complex_exp", lambda tf, x: tf.exp(x), np.exp, [((3,),)], sampler=complex_of(any_real)),
]

define_tests(SPECS, globals())
