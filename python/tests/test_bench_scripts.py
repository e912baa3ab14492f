"""The Python benchmark programs (python/bench/) start: their imports of
the package resolve (with PYTHONPATH=python, as their usage says) and they
parse their options."""
import os
import shutil
import subprocess
import sys
import tempfile
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

    def test_vllm_tier_bench_runs_a_round_through_the_tier(self):
        # It builds vLLM's offloading config as the stand-in has it now: a
        # config change upstream that the bench missed fails here.
        lib = os.environ.get("L3CACHE_LIB", "")
        l3bench = os.path.join(os.path.dirname(lib), "bench", "l3bench")
        self.assertTrue(os.path.exists(l3bench), "l3bench beside %s (the build tree)" % lib)
        out_dir = tempfile.mkdtemp(dir=os.environ.get("L3_TEST_DIR") or None, prefix="vtb")
        try:
            script = os.path.join(BENCH, "vllm_tier_bench.py")
            out = subprocess.run([sys.executable, script, "--l3bench", l3bench, "--dir", out_dir, "--total", "8M",
                                  "--rounds", "1"], capture_output=True, text=True, timeout=300)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("tier store/l3bench: median", out.stdout)
        self.assertIn("tier load/files: median", out.stdout)


if __name__ == "__main__":
    unittest.main()
