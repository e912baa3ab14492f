"""The LMCache adapter's tests again, over the stand-in's bridge at LMCache
mainline's text (native_connector_l2_adapter.py at
0b43a45563fe5c25dc80ac9f8be16d3f20d86b22) instead of the text of PR #4838
(open) that test_lmcache and test_lmcache_cluster follow: no reservation
before a store, and an ``ok`` completion charges every key of its batch
(lmcache_standin.bridge.NativeConnectorL2Adapter.reserve). Under either,
the plugin adapter keeps LMCache's usage what the store holds; through the
native_plugin path alone, mainline charges nothing of a batch that is not
``ok``, so a key of it that was stored goes uncharged until LMCache's next
store of it (test_lmcache's partly failed batch asserts each text's)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_lmcache as adapter_tests  # noqa: E402
import test_lmcache_cluster as cluster_tests  # noqa: E402
from lmcache_standin.bridge import NativeConnectorL2Adapter  # noqa: E402


class Mainline(unittest.TestCase):
    """Each test with the bridge at mainline's text, put back after it."""

    def setUp(self):
        self.addCleanup(setattr, NativeConnectorL2Adapter, "reserve", NativeConnectorL2Adapter.reserve)
        NativeConnectorL2Adapter.reserve = False
        super().setUp()


class MainlineAdapterTest(Mainline, adapter_tests.LMCacheAdapterTest):
    pass


class MainlineAccountingTest(Mainline, cluster_tests.AccountingTest):
    pass


class MainlineTenantTest(Mainline, cluster_tests.TenantTest):
    pass


if __name__ == "__main__":
    unittest.main()
