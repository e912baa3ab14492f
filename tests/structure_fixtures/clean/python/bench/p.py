"""A Python program that imports the package: it lives in python/."""
import l3cache
from l3cache import __doc__ as doc

print(l3cache, doc)
