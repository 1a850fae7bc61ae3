"""The long run of the program fuzzer: one program per seed, each checked in a child process
under a time limit, failures shrunk, and a summary table at the end.

    python tests/fuzz/run_long.py --minutes 12            # seeds 0, 1, 2, ... for 12 minutes
    python tests/fuzz/run_long.py --programs 500 --start 10000
    python tests/fuzz/run_long.py --seed 1234              # replay one program: its code and report
    python tests/fuzz/run_long.py --seed 1234 --shrink     # ... and its smallest failing version

The table counts programs tried, matches, known differences (spec flags and
known_differences.KNOWN), open bugs (known_differences.OPEN_BUGS), mismatches by kind,
internal errors, crashes (the child died: rerun without TensorFlow to tell whose crash it
was) and hangs (over --limit seconds); then each distinct failure once, with its count,
a seed that shows it and the shrunk program.  Without TensorFlow installed only tapeflow's
own errors, tf.function against eager and central differences are checked.
"""

import argparse
import collections
import multiprocessing
import os
import signal
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _setup(threads=1):
    """The child's imports (tests/ and tests/fuzz on the path, as under pytest's conftest)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    for path in (_HERE, os.path.dirname(_HERE)):
        if path not in sys.path:
            sys.path.insert(0, path)
    from tapeflow.framework import op_def
    op_def.SAVED_INPUT_MIN_BYTES = 0          # as tests/conftest.py
    import warnings
    warnings.filterwarnings("ignore")
    import fuzz_checks
    if fuzz_checks.HAVE_TF:
        tf = fuzz_checks.tensorflow()
        tf.get_logger().setLevel("ERROR")
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:
            pass
    return fuzz_checks


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the checks' `except Exception` lets it through."""


def _on_alarm(signum, frame):
    raise Hang()


def _worker(conn, with_tf, limit, shrink_budget):
    fc = _setup()
    import fuzz_programs as fp
    signal.signal(signal.SIGALRM, _on_alarm)
    shrunk = set()
    while True:
        seed = conn.recv()
        if seed is None:
            return
        start = time.perf_counter()
        signal.alarm(limit)
        try:
            program = fp.program_from_seed(seed)
            report = fc.check_program(program, with_tf)
            result = {"seed": seed, "status": report.status(), "rows": program.rows(),
                      "findings": [(f.category, f.kind, f.stage, f.path, f.detail) for f in report.findings],
                      "source": program.source()}
        except Hang:
            result = {"seed": seed, "status": "hang", "rows": [], "findings": [], "source": ""}
        finally:
            signal.alarm(0)
        result["seconds"] = time.perf_counter() - start
        # shrink each new failure signature (category, kind, stage, rows)
        result["minimal"] = {}
        for f in report.failures() if result["status"] not in ("hang",) else []:
            key = (f.category, f.kind, f.stage, tuple(program.rows()))
            if key in shrunk or f.signature() in result["minimal"]:
                continue
            shrunk.add(key)
            signal.alarm(limit + int(shrink_budget))
            try:
                small = fc.shrink(program, f.signature(), shrink_budget, with_tf)
                r = fc.check_program(small, with_tf)
                detail = next((g.detail for g in r.findings if g.signature() == f.signature()), f.detail)
                result["minimal"][f.signature()] = (small.source(), small.rows(), detail)
            except Hang:
                pass
            finally:
                signal.alarm(0)
        conn.send(result)


def _crash_owner(seed, limit):
    """Reruns a program that killed the child without TensorFlow: whose crash was it?"""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_worker, args=(child, False, limit, 0), daemon=True)
    proc.start()
    parent.send(seed)
    ok = parent.poll(limit + 120)
    owner = "TensorFlow" if ok and _recv(parent) is not None else "tapeflow"
    proc.kill()
    return owner


def _recv(conn):
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


class _Child:
    def __init__(self, with_tf, limit, shrink_budget):
        self.args = (with_tf, limit, shrink_budget)
        self.start()

    def start(self):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.proc.start()

    def restart(self):
        self.proc.kill()
        self.proc.join()
        self.start()


def run(args):
    with_tf = not args.no_tf
    child = _Child(with_tf, args.limit, args.shrink_budget)
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    results = []
    seed = args.start
    while (deadline is None or time.monotonic() < deadline) and (args.programs is None or len(results) < args.programs):
        child.conn.send(seed)
        if child.conn.poll(args.limit + args.shrink_budget + 180):
            result = _recv(child.conn)
            if result is None:
                owner = _crash_owner(seed, args.limit)
                result = {"seed": seed, "status": "crash", "rows": [], "source": _source_of(seed), "minimal": {},
                          "findings": [("crash", f"crash ({owner})", "", "", "")], "seconds": 0.0}
                child.restart()
        else:
            result = {"seed": seed, "status": "hang", "rows": [], "findings": [], "source": "", "minimal": {},
                      "seconds": float(args.limit)}
            child.restart()
        if result["status"] == "hang":
            result["source"] = _source_of(seed)
        results.append(result)
        if args.verbose and result["status"] not in ("match", "known"):
            print(f"seed {seed}: {result['status']} {[f[:3] for f in result['findings'] if f[0] != 'known']}",
                  flush=True)
        seed += 1
    child.conn.send(None)
    child.proc.join(10)
    return results


def _source_of(seed):
    _setup()
    import fuzz_programs as fp
    return fp.program_from_seed(seed).source()


def summary(results, elapsed):
    """The summary table and each distinct failure with its shrunk repro, as text."""
    statuses = collections.Counter(r["status"] for r in results)
    kinds = collections.Counter()
    groups = {}
    for r in results:
        seen = set()
        for category, kind, stage, path, detail in r["findings"]:
            if category in ("known",):
                continue
            key = (category, kind, stage)
            if key in seen:
                continue
            seen.add(key)
            kinds[key] += 1
            minimal = r["minimal"].get(key)
            rows = tuple(minimal[1]) if minimal else tuple(r["rows"])
            if category == "open-bug":          # one group per entry of OPEN_BUGS
                rows = (detail.split(": ", 1)[0],)
            g = groups.setdefault((category, kind, stage, rows), {"count": 0, "seeds": [], "detail": detail,
                                                                  "source": r["source"], "minimal": minimal})
            g["count"] += 1
            g["seeds"].append(r["seed"])
            if minimal and not g["minimal"]:
                g["minimal"] = minimal
        if r["status"] == "hang":
            key = ("hang", "hang", "")
            kinds[key] += 1
            groups.setdefault(key + (tuple(),), {"count": 0, "seeds": [], "detail": "", "source": r["source"],
                                                 "minimal": None})
            groups[key + (tuple(),)]["count"] += 1
            groups[key + (tuple(),)]["seeds"].append(r["seed"])
    lines = [f"programs tried: {len(results)} in {elapsed / 60:.1f} min "
             f"({sum(r['seconds'] for r in results) / max(len(results), 1):.2f} s each)",
             f"  match:               {statuses['match']}",
             f"  known only:          {statuses['known']}",
             f"  open bugs only:      {statuses['open-bug']}",
             f"  with mismatches:     {statuses['mismatch']}",
             f"  with internal error: {statuses['internal']}",
             f"  fuzzer's own errors: {statuses['harness']}",
             f"  crashes:             {statuses['crash']}",
             f"  hangs:               {statuses['hang']}",
             "", "programs per finding (category / kind / stage):"]
    for (category, kind, stage), n in kinds.most_common():
        lines.append(f"  {n:5d}  {category:9s} {kind:24s} {stage}")
    reasons = collections.Counter()
    for r in results:
        for reason in {detail.split(": ", 1)[0] for category, _, _, _, detail in r["findings"] if category == "known"}:
            reasons[reason] += 1
    lines += ["", "programs per known difference:"]
    lines += [f"  {n:5d}  {reason[:150]}" for reason, n in reasons.most_common()]
    lines += ["", f"distinct failures (by shrunk program's rows): {len(groups)}"]
    for (category, kind, stage, rows), g in sorted(groups.items(), key=lambda kv: -kv[1]["count"]):
        lines += ["", f"=== {category} / {kind} / {stage}: {g['count']} programs, rows {list(rows)}, "
                      f"seeds {g['seeds'][:8]}"]
        if g["minimal"]:
            lines += [g["minimal"][0], f"--> {g['minimal'][2][:1500]}"]
        else:
            lines += [g["source"], f"--> {g['detail'][:1500]}"]
    return "\n".join(lines)


def replay(seed, shrink=False, with_tf=True):
    fc = _setup()
    import fuzz_programs as fp
    program = fp.program_from_seed(seed)
    report = fc.check_program(program, with_tf)
    print(report.describe())
    print(f"status: {report.status()} ({report.seconds:.2f} s)")
    if shrink:
        for f in report.failures():
            small = fc.shrink(program, f.signature(), 120, with_tf)
            print(f"\nshrunk for {f.signature()}:")
            print(fc.check_program(small, with_tf).describe())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=None, help="stop after this many minutes")
    p.add_argument("--programs", type=int, default=None, help="stop after this many programs")
    p.add_argument("--start", type=int, default=0, help="the first seed")
    p.add_argument("--limit", type=int, default=60, help="seconds one program may take before it is a hang")
    p.add_argument("--shrink-budget", type=float, default=45.0, help="seconds spent shrinking each new failure")
    p.add_argument("--no-tf", action="store_true", help="do not compare with TensorFlow")
    p.add_argument("--seed", type=int, default=None, help="replay one program")
    p.add_argument("--shrink", action="store_true", help="with --seed: shrink its failures")
    p.add_argument("--out", default=None, help="also write the summary to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="print each failing seed as it is found")
    args = p.parse_args(argv)
    if args.seed is not None:
        replay(args.seed, args.shrink, not args.no_tf)
        return
    if args.minutes is None and args.programs is None:
        args.minutes = 12.0
    start = time.monotonic()
    results = run(args)
    text = summary(results, time.monotonic() - start)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
