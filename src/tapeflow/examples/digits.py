"""Train a small MLP on scikit-learn's bundled digits with `tf.GradientTape`.

Run it with::

    pip install -e ".[examples]"
    python -m tapeflow.examples.digits            # 20 epochs, a few seconds
    python -m tapeflow.examples.digits --epochs 5 --seed 1

The model is 64-128-10 with a ReLU hidden layer, trained by mini-batch SGD with
momentum written by hand: the tape gives the gradients, `Variable.assign_sub`
applies the update. The data (8x8 images of handwritten digits, 1797 of them)
ships with scikit-learn, so nothing is downloaded.
"""

import argparse
import time

import numpy as np

import tapeflow as tf


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
    """A two-layer perceptron `relu(x @ w1 + b1) @ w2 + b2` with He-initialized weights."""

    def __init__(self, sizes=(64, 128, 10), seed=0):
        rng = np.random.default_rng(seed)
        self.variables = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out)).astype(np.float32)
            self.variables.append(tf.Variable(w, name=f"w{i}"))
            self.variables.append(tf.Variable(np.zeros(fan_out, np.float32), name=f"b{i}"))

    def __call__(self, x):
        """Logits for a batch `x` of shape `[batch, 64]`."""
        w1, b1, w2, b2 = self.variables
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        return tf.matmul(hidden, w2) + b2


def loss_fn(logits, labels):
    """Mean softmax cross-entropy of integer `labels`."""
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def accuracy(model, x, y):
    """Fraction of `x` whose highest logit is the label `y`."""
    logits = model(tf.constant(x))
    return float(np.mean(np.argmax(logits.numpy(), axis=1) == y))


def train(model, x, y, epochs, batch_size=32, learning_rate=0.05, momentum=0.9, seed=0, progress=True):
    """Mini-batch SGD with momentum: `v = momentum * v + g; w -= learning_rate * v`.

    Returns:
      The mean training loss of the last epoch.
    """
    rng = np.random.default_rng(seed)
    velocities = [tf.zeros_like(v) for v in model.variables]
    steps_per_epoch = -(-len(x) // batch_size)
    bar = _progress_bar(epochs * steps_per_epoch, progress)
    epoch_loss = float("nan")
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x), batch_size):
            batch = order[start:start + batch_size]
            xb, yb = tf.constant(x[batch]), tf.constant(y[batch])
            with tf.GradientTape() as tape:
                loss = loss_fn(model(xb), yb)
            grads = tape.gradient(loss, model.variables)
            for i, (var, grad) in enumerate(zip(model.variables, grads, strict=True)):
                velocities[i] = momentum * velocities[i] + grad
                var.assign_sub(learning_rate * velocities[i])
            total += float(loss) * len(batch)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{float(loss):.4f}", refresh=False)
        epoch_loss = total / len(x)
    if bar is not None:
        bar.close()
    return epoch_loss


def _progress_bar(total, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:   # the bar is a nicety; train without it
        return None
    return tqdm(total=total, desc="training", unit="step")


def main(epochs=20, seed=0, progress=True, verbose=True):
    """Trains the MLP on the digits and returns its held-out accuracy.

    Args:
      epochs: passes over the training set.
      seed: seeds the data split, the initial weights and the batch order.
      progress: show a tqdm progress bar with the running loss.
      verbose: print the summary lines.

    Returns:
      The test-set accuracy, a float in [0, 1].
    """
    x_train, y_train, x_test, y_test = load_data(seed)
    model = MLP(seed=seed)
    start = time.perf_counter()
    final_loss = train(model, x_train, y_train, epochs, seed=seed, progress=progress)
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    if verbose:
        print(f"trained 64-128-10 MLP on {len(x_train)} digits for {epochs} epochs in {elapsed:.1f} s "
              f"(final train loss {final_loss:.4f})")
        print(f"test accuracy: {acc:.4f} ({len(x_test)} held-out digits)")
    return acc


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tapeflow.examples.digits",
        description="Train a 64-128-10 MLP on scikit-learn's digits with tapeflow's GradientTape.")
    parser.add_argument("--epochs", type=int, default=20, help="passes over the training set (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, weights and batches (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _parse_args()
    main(epochs=args.epochs, seed=args.seed, progress=not args.no_progress)
