"""Key helpers the engine adapters share: the deployment's tenant tag and a
request's salt folded into a namespace, so that two tenants never read
each other's pages through one store.

A store is shared by every process that opens its path; what keeps two
tenants apart is the namespace of their keys. An engine that passes a
per-request salt (vLLM's and SGLang's ``cache_salt``, LMCache's
``request_configs``) gets it folded into the key where the adapter sees
it; otherwise the deployment-level tag, ``namespace.deployment_id`` of the
l3cache config, is folded into every key the adapter makes (the default,
``"default"``, folds nothing, so existing stores keep their keys).
"""

import hashlib
import json
from typing import Any, Optional, Union

__all__ = ["tenant_tag", "salted"]

Config = Union[dict, str, None]

_DEFAULT = "default"


def _config_dict(config: Config) -> dict:
    if config is None:
        return {}
    if isinstance(config, dict):
        return config
    text = config
    if not config.lstrip().startswith("{"):
        with open(config, "r", encoding="utf-8") as f:
            text = f.read()
    parsed = json.loads(text)
    return parsed if isinstance(parsed, dict) else {}


def tenant_tag(config: Config) -> str:
    """The deployment-level tenant tag of an l3cache config (a dict, JSON
    text or a path): ``namespace.deployment_id``, or "" where it is unset
    or ``"default"`` (nothing to fold into keys)."""
    ns = _config_dict(config).get("namespace") or {}
    tag = ns.get("deployment_id", _DEFAULT) if isinstance(ns, dict) else _DEFAULT
    return "" if tag in (None, "", _DEFAULT) else str(tag)


def salted(namespace: str, salt: Optional[Any]) -> str:
    """``namespace`` with a salt folded in: unchanged for no salt (None or
    empty), else ``namespace`` and 16 hex digits of the salt's SHA-256,
    joined by "-" (no "_": it ends an l3cache namespace). The same salt
    gives the same namespace in every process and after a restart."""
    if salt is None or salt == "" or salt == b"":
        return namespace
    raw = salt if isinstance(salt, bytes) else str(salt).encode("utf-8")
    return "%s-%s" % (namespace, hashlib.sha256(raw).hexdigest()[:16])
