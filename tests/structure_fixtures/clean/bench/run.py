"""A bench script that uses no part of the package."""
import json

print(json.dumps({"ok": True}))
