"""Follows vllm/v1/core/kv_cache_utils.py at 001cabc1be16a59a70d720ed61a13b678c060a18
(the newest the code index holds): a request's block hashes. Each full
block's hash is hash_function((parent hash or NONE_HASH, its token ids,
extra keys)); the extra keys of the block that starts at token 0 carry the
request's ``cache_salt`` (generate_block_hash_extra_keys: LoRA, multimodal
and prompt-embeds keys are left out here), so a salt changes the first
block's hash and, through the chain, every later one. ``sha256`` is
vllm.utils.hashing.sha256 (SHA-256 of the pickled value); NONE_HASH is
hash_function(PYTHONHASHSEED) when set (init_none_hash)."""
import hashlib
import os
import pickle

NONE_HASH = None


def sha256(value):
    return hashlib.sha256(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def init_none_hash(hash_fn=sha256):
    global NONE_HASH
    seed = os.getenv("PYTHONHASHSEED")
    NONE_HASH = os.urandom(32) if seed is None else hash_fn(seed)


def generate_block_hash_extra_keys(cache_salt, start_token_idx):
    keys = [cache_salt] if (start_token_idx == 0 and cache_salt) else []
    return tuple(keys) if keys else None


def hash_block_tokens(hash_function, parent_block_hash, curr_block_token_ids, extra_keys=None):
    if not parent_block_hash:
        parent_block_hash = NONE_HASH
    return hash_function((parent_block_hash, tuple(curr_block_token_ids), extra_keys))


def request_block_hashes(token_ids, block_size, cache_salt=None, hash_function=sha256):
    """The block hashes of a request's full blocks (get_request_block_hasher's loop)."""
    hashes, parent = [], None
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        extra = generate_block_hash_extra_keys(cache_salt, start)
        parent = hash_block_tokens(hash_function, parent, token_ids[start:start + block_size], extra)
        hashes.append(parent)
    return hashes
