"""A snapshot holding a lock: the lock cannot be fingerprinted, so that part is not checked."""

import threading


class Cache:
    def __init__(self):
        self.entries = {"a": 1}
        self.lock = threading.Lock()

    def state_dict(self):
        return {"entries": dict(self.entries), "lock": self.lock}

    def load_state_dict(self, state):
        self.entries = dict(state["entries"])


cache = Cache()
saved = cache.state_dict()
