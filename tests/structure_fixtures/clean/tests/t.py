"""Tests may import anything."""
import l3cache

print(l3cache)
