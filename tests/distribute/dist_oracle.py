"""Runs dist_scenarios.py with TensorFlow on two logical CPUs and writes the normalized results
(a pickle of {(scenario, mode): result}) to the file named by argv[1].  Run in a fresh
process: TensorFlow must split its CPU before it initializes."""

import os
import pickle
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # noqa: E402

import dist_scenarios  # noqa: E402


def main(path):
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    env = dist_scenarios.make_env(tf)
    results = {case: dist_scenarios.run_case(tf, env, *case) for case in dist_scenarios.cases()}
    with open(path, "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1])
