"""Follows vllm/v1/kv_offload/tiering/async_lookup.py at
2bd1a6920d3d65b260bb1dffde5ddf95b83fb098, with ``mark_miss`` that the fs
tier at 061245c7e1e7bb485a53ec8b7b75362faff2fcfb calls: AsyncLookupManager,
a tier's non-blocking existence checks. ``lookup`` answers from its state
(True, False, or None: not known yet, the tier answers RETRY) and queues a
new key; ``flush`` (the tier's on_schedule_end) posts the step's keys as one
batch to a background thread, which runs the subclass's ``batch_lookup``;
the next step's first lookup applies the answers. ``cleanup`` forgets a
finished request's keys."""
import queue
import threading


class _State:
    __slots__ = ("result", "request_ids")

    def __init__(self):
        self.result = None
        self.request_ids = set()


class AsyncLookupManager:
    def __init__(self, tier_type):
        self._tier_type = tier_type
        self._lookup_state = {}
        self._req_keys = {}
        self._lookup_batch = []
        self._lookup_queue = queue.SimpleQueue()
        self._pending_results = queue.SimpleQueue()
        self._need_to_drain = False
        self._thread = threading.Thread(target=self._worker, name="vllm_offloading_lookup_" + tier_type,
                                        daemon=True)
        self._thread.start()

    def batch_lookup(self, keys, req_context):
        raise NotImplementedError

    def lookup(self, key, req_context):
        if self._need_to_drain:
            self.drain_results()
            self._need_to_drain = False
        state = self._lookup_state.get(key)
        if state is None:
            state = self._lookup_state[key] = _State()
            self._lookup_batch.append((key, req_context))
        state.request_ids.add(req_context.req_id)
        self._req_keys.setdefault(req_context.req_id, set()).add(key)
        return state.result

    def flush(self):
        self._need_to_drain = True
        if self._lookup_batch:
            self._lookup_queue.put(self._lookup_batch)
            self._lookup_batch = []

    def drain_results(self):
        while True:
            try:
                batch = self._pending_results.get_nowait()
            except queue.Empty:
                break
            for key, result in batch:
                state = self._lookup_state.get(key)
                if state is not None:
                    state.result = result

    def mark_miss(self, keys):
        for key in keys:
            state = self._lookup_state.get(key)
            if state is not None:
                state.result = False

    def cleanup(self, req_id):
        for key in self._req_keys.pop(req_id, ()):
            state = self._lookup_state[key]
            state.request_ids.discard(req_id)
            if not state.request_ids:
                del self._lookup_state[key]

    def shutdown(self):
        self._lookup_queue.put(None)
        self._thread.join()

    def _worker(self):
        while True:
            pending = self._lookup_queue.get()
            if pending is None:
                break
            batches = {}
            for key, ctx in pending:
                batches.setdefault(ctx.req_id, (ctx, []))[1].append(key)
            results = []
            for ctx, keys in batches.values():
                try:
                    hits = list(self.batch_lookup(keys, ctx))
                except Exception:  # noqa: BLE001 - upstream logs and reports misses
                    hits = [False] * len(keys)
                results.extend(zip(keys, hits))
            if results:
                self._pending_results.put(results)
