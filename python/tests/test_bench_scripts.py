"""The Python benchmark programs (python/bench/) start: their imports of
the package resolve (with PYTHONPATH=python, as their usage says) and they
parse their options."""
import os
import subprocess
import sys
import unittest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


class BenchScriptsTest(unittest.TestCase):
    def test_lmcache_bench_prints_its_usage(self):
        script = os.path.join(BENCH, "lmcache_bench.py")
        out = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("The LMCache connector's throughput against l3bench's", out.stdout)
        self.assertIn("--l3bench", out.stdout)

    def test_lmcache_bench_refuses_a_run_without_l3bench(self):
        script = os.path.join(BENCH, "lmcache_bench.py")
        out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--l3bench", out.stderr)


if __name__ == "__main__":
    unittest.main()
