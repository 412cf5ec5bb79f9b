import asyncio, gc, time
from evaluator.run.runner import run_dataset
from evaluator.run_options import RunOptions
from evaluator.targets.callable import CallableTarget
from tests.benchmarks.support import golden_set
t = CallableTarget("tests.benchmarks.support:answer", name="bench")
reports = []
base = gc.get_count(); n0 = len(gc.get_objects())
for i in range(100):
    ds = golden_set(1000, seed=i)
    reports.append(asyncio.run(run_dataset(ds, t, RunOptions(concurrency=2))))
gc.collect()
print("tracked objects:", len(gc.get_objects()) - n0, "per case %.1f" % ((len(gc.get_objects()) - n0) / 100000))
for _ in range(3):
    s = time.perf_counter(); gc.collect(); print("full collection %.1f ms" % ((time.perf_counter() - s) * 1e3))
import collections
c = collections.Counter(type(o).__name__ for o in gc.get_objects())
print(c.most_common(12))
