"""A bench script that drives the package: it belongs in python/bench/."""
import json

from l3cache import __doc__ as doc

print(json.dumps({"doc": doc}))
