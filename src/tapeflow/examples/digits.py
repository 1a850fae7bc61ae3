"""Train a small MLP on scikit-learn's bundled digits in mixed precision.

Run it with::

    pip install -e ".[examples]"
    python -m tapeflow.examples.digits                  # float16, tf.function step, ~10 s
    python -m tapeflow.examples.digits --dtype float32  # the same in full precision
    python -m tapeflow.examples.digits --eager --epochs 5 --seed 1
    python -m tapeflow.examples.digits --replicas 2     # MirroredStrategy: 2 replicas in threads
    mpiexec -n 2 python -m tapeflow.examples.digits --multi-worker   # one replica per MPI process

The model is 64-256-10 with a ReLU hidden layer. Its weights are float32
"master" variables; with `--dtype float16` each step casts them and the
inputs to float16 and computes the layers there, while the softmax
cross-entropy is taken in float32, the usual mixed-precision recipe. The
gradients come from a `LossScaleGradientTape` with a `DynamicLossScale`: the
loss is multiplied by the scale before the float16 backward pass (so small
gradients do not flush to zero) and the gradients divided by it after; a step
whose gradients overflow is retried at half the scale, and after
`increment_period` good steps the scale doubles again. `tf.keras.optimizers.SGD`
with momentum applies the float32 gradients. The step runs under
`tf.function` unless `--eager`.

With `--replicas N` the CPU is split into N logical devices and a
`tf.distribute.MirroredStrategy` runs one replica per device in threads; with
`--multi-worker`, launched under `mpiexec -n N` (`pip install -e
".[examples,mpi]"`), a `MultiWorkerMirroredStrategy` runs one replica per
process. Either way each replica takes its share of every batch (the same
global batches as one replica), its loss is the sum over its examples divided
by the global batch size, the strategy adds up the gradients across replicas,
and the loss scale is updated once from every replica's gradients: the
weights, and so the accuracy, are those of one replica up to rounding.

The run prints a progress bar with the loss and the current loss scale, the
held-out accuracy, how many rounds overflowed and which op overflowed first
(tapeflow's report, beyond TensorFlow), and writes a plot of loss and loss
scale over the steps. The data (8x8 images of handwritten digits, 1797 of
them) ships with scikit-learn, so nothing is downloaded.
"""

import argparse
import time

import numpy as np

import tapeflow as tf

mixed_precision = tf.mixed_precision.experimental


def load_data(seed=0, test_size=0.25):
    """The digits, pixels scaled to [0, 1], split into train and test (stratified).

    Returns:
      `(x_train, y_train, x_test, y_test)` as NumPy arrays (float32 images of
      64 pixels, int32 labels 0..9).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, random_state=seed, stratify=y)
    return x_train, y_train, x_test, y_test


class MLP:
    """`relu(x @ w1 + b1) @ w2 + b2` with float32 weights, computed in `compute_dtype`."""

    def __init__(self, sizes=(64, 256, 10), compute_dtype=tf.float16, seed=0):
        rng = np.random.default_rng(seed)
        self.compute_dtype = compute_dtype
        self.variables = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out)).astype(np.float32)
            self.variables.append(tf.Variable(w, name=f"w{i + 1}"))
            self.variables.append(tf.Variable(np.zeros(fan_out, np.float32), name=f"b{i + 1}"))

    def __call__(self, x):
        """float32 logits for a batch `x` of shape `[batch, 64]`."""
        w1, b1, w2, b2 = (tf.cast(v, self.compute_dtype) for v in self.variables)
        hidden = tf.nn.relu(tf.matmul(tf.cast(x, self.compute_dtype), w1) + b1)
        return tf.cast(tf.matmul(hidden, w2) + b2, tf.float32)


def loss_fn(logits, labels):
    """Mean softmax cross-entropy of integer `labels` (in float32)."""
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def accuracy(model, x, y):
    """Fraction of `x` whose highest logit is the label `y`."""
    logits = model(tf.constant(x))
    return float(np.mean(np.argmax(logits.numpy(), axis=1) == y))


def make_step(model, optimizer, loss_scale, eager=False, strategy=None):
    """One training step: loss-scaled gradients from a LossScaleGradientTape, applied by `optimizer`.

    The step takes one replica's share of the batch and the global batch size,
    and returns the global batch's mean loss. Under a strategy it runs once per
    replica (`strategy.run`); the optimizer sums the replicas' gradients.
    """
    strategy = strategy or tf.distribute.get_strategy()

    def replica_step(x, y, global_batch_size):
        with mixed_precision.LossScaleGradientTape(loss_scale) as tape:
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(zip(grads, model.variables))
        return loss

    def step(x, y, global_batch_size):
        losses = strategy.run(replica_step, args=(x, y, global_batch_size))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
    return step if eager else tf.function(step)


def train(model, x, y, epochs, batch_size=32, learning_rate=0.05, momentum=0.9, seed=0, eager=False,
          initial_scale=2.0 ** 15, increment_period=50, progress=True, strategy=None):
    """Mini-batch SGD with momentum under a dynamic loss scale (batches of `batch_size`;
    the last, smaller batch of each epoch is left out, so that every replica count
    splits the same batches).

    Returns:
      A dict with the per-step `losses` and `scales` (lists of floats), the
      `loss_scale` object and the mean training loss of the last epoch.
    """
    strategy = strategy or tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        raise ValueError(f"batch_size {batch_size} does not split into {replicas} replicas")
    rng = np.random.default_rng(seed)
    with strategy.scope():
        loss_scale = mixed_precision.DynamicLossScale(initial_loss_scale=initial_scale,
                                                      increment_period=increment_period)
        optimizer = tf.keras.optimizers.SGD(learning_rate, momentum=momentum)
    step = make_step(model, optimizer, loss_scale, eager, strategy)
    steps_per_epoch = len(x) // batch_size
    bar = _progress_bar(epochs * steps_per_epoch, progress)
    losses, scales = [], []
    epoch_loss = float("nan")
    share = batch_size // replicas
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, steps_per_epoch * batch_size, batch_size):
            batch = order[start:start + batch_size]

            def shard(ctx, data):    # replica i takes the i-th slice of the batch
                i = ctx.replica_id_in_sync_group
                return tf.constant(data[batch[i * share:(i + 1) * share]])
            xs = strategy.experimental_distribute_values_from_function(lambda ctx: shard(ctx, x))
            ys = strategy.experimental_distribute_values_from_function(lambda ctx: shard(ctx, y))
            loss = float(step(xs, ys, tf.constant(batch_size, tf.int32)))
            losses.append(loss)
            scales.append(float(loss_scale()))
            total += loss * len(batch)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss:.4f}", scale=f"{scales[-1]:g}", refresh=False)
        epoch_loss = total / (steps_per_epoch * batch_size)
    if bar is not None:
        bar.close()
    return {"losses": losses, "scales": scales, "loss_scale": loss_scale, "final_loss": epoch_loss}


def _progress_bar(total, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:   # the bar is a nicety; train without it
        return None
    return tqdm(total=total, desc="training", unit="step")


def plot(losses, scales, path):
    """Writes a PNG of the loss and the loss scale per step to `path`; returns the path,
    or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    top.plot(losses, linewidth=0.8)
    top.set_ylabel("training loss")
    top.set_yscale("log")
    bottom.step(range(len(scales)), scales, where="post", color="tab:orange")
    bottom.set_yscale("log", base=2)
    bottom.set_ylabel("loss scale")
    bottom.set_xlabel("step")
    fig.suptitle("tapeflow: digits MLP in mixed precision")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def make_strategy(replicas=1, multi_worker=False):
    """The strategy of a run: `MultiWorkerMirroredStrategy` (one replica per MPI process),
    `MirroredStrategy` over `replicas` logical CPUs, or the default strategy (one replica).

    Splitting the CPU must come before the first tensor of the process.
    """
    if multi_worker:
        return tf.distribute.MultiWorkerMirroredStrategy()
    if replicas > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        if len(tf.config.get_logical_device_configuration(cpu) or ()) != replicas:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
        return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    return tf.distribute.get_strategy()


def main(epochs=20, seed=0, dtype="float16", eager=False, plot_path="digits_mixed_precision.png",
         progress=True, verbose=True, replicas=1, multi_worker=False):
    """Trains the MLP on the digits and returns its held-out accuracy.

    Args:
      epochs: passes over the training set.
      seed: seeds the data split, the initial weights and the batch order.
      dtype: "float16" (mixed precision) or "float32".
      eager: run the step eagerly instead of under `tf.function`.
      plot_path: where to write the PNG of loss and loss scale (None: no plot).
      progress: show a tqdm progress bar with the running loss and loss scale.
      verbose: print the summary lines.
      replicas: replicas of a MirroredStrategy over as many logical CPUs (1: none).
      multi_worker: one replica per MPI process (`MultiWorkerMirroredStrategy`, under mpiexec).

    Returns:
      The test-set accuracy, a float in [0, 1].
    """
    strategy = make_strategy(replicas, multi_worker)
    chief = strategy.cluster_resolver is None or strategy.cluster_resolver.task_id == 0
    verbose, progress = verbose and chief, progress and chief     # one report per job
    x_train, y_train, x_test, y_test = load_data(seed)
    with strategy.scope():
        model = MLP(compute_dtype=tf.as_dtype(dtype), seed=seed)
    start = time.perf_counter()
    run = train(model, x_train, y_train, epochs, seed=seed, eager=eager, progress=progress, strategy=strategy)
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    if verbose:
        scale = run["loss_scale"]
        mode = "eagerly" if eager else "under tf.function"
        n = strategy.num_replicas_in_sync
        where = (f", {n} replicas ({type(strategy).__name__})" if n > 1 else "")
        print(f"trained 64-256-10 MLP in {dtype} ({mode}{where}) on {len(x_train)} digits for {epochs} epochs "
              f"({len(run['losses'])} steps) in {elapsed:.1f} s; final train loss {run['final_loss']:.4f}")
        print(f"test accuracy: {acc:.4f} ({len(x_test)} held-out digits)")
        print(f"loss scale: {float(scale()):g} at the end; {scale.skipped_steps} overflowing rounds were retried "
              "at a lower scale")
        report = scale.last_nonfinite
        print(f"last overflow: {report}" if report is not None else "no overflow")
        if plot_path:
            written = plot(run["losses"], run["scales"], plot_path)
            print(f"plot of loss and loss scale: {written}" if written else
                  "no plot: install matplotlib (pip install -e \".[examples]\")")
    return acc


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tapeflow.examples.digits",
        description="Train a 64-256-10 MLP on scikit-learn's digits in mixed precision with tapeflow.")
    parser.add_argument("--epochs", type=int, default=20, help="passes over the training set (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, weights and batches (default 0)")
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16",
                        help="compute dtype of the layers (default float16)")
    parser.add_argument("--eager", action="store_true", help="run the step eagerly, not under tf.function")
    parser.add_argument("--plot", default="digits_mixed_precision.png",
                        help="PNG to write (default digits_mixed_precision.png; '' for none)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--replicas", type=int, default=1,
                        help="replicas of a MirroredStrategy, one per logical CPU, in threads (default 1)")
    parser.add_argument("--multi-worker", action="store_true",
                        help="one replica per process: run under mpiexec -n N (MultiWorkerMirroredStrategy)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _parse_args()
    main(epochs=args.epochs, seed=args.seed, dtype=args.dtype, eager=args.eager, plot_path=args.plot or None,
         progress=not args.no_progress, replicas=args.replicas, multi_worker=args.multi_worker)
