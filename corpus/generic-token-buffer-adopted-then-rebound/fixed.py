"""The packing dataset's load_state_dict() copies the token buffer: the checkpoint stays as taken, the retry replays.

torchtitan's HuggingFaceTextDataset shape (v0.2.2), with load_state_dict() copying what it is given.
"""

import pickle


class TokenPacker:
    """Packs documents (already tokenized) into fixed-length sequences; resumable."""

    def __init__(self, docs, seq_len):
        self._data = docs
        self.seq_len = seq_len
        self._sample_idx = 0
        self._token_buffer = []

    def __iter__(self):
        max_buffer_token_len = 1 + self.seq_len
        for sample_tokens in self._data[self._sample_idx:]:
            self._token_buffer.extend(sample_tokens)
            self._sample_idx += 1
            while len(self._token_buffer) >= max_buffer_token_len:
                x = self._token_buffer[:max_buffer_token_len]
                self._token_buffer = self._token_buffer[max_buffer_token_len:]
                yield x

    def load_state_dict(self, state_dict):
        self._token_buffer = list(state_dict["token_buffer"])  # its own list
        self._sample_idx = state_dict["sample_idx"]

    def state_dict(self):
        return {"token_buffer": self._token_buffer, "sample_idx": self._sample_idx}


DOCS = [[1, 2, 3, 4, 5, 6], [7, 8, 9], [10, 11, 12, 13], [14, 15, 16, 17, 18], [19, 20, 21, 22]]

first = TokenPacker(DOCS, seq_len=3)
it = iter(first)
next(it)
# As torchtitan's ParallelAwareDataloader saves it: pickled, so the checkpoint owns its objects.
checkpoint = pickle.loads(pickle.dumps(first.state_dict()))
taken = pickle.loads(pickle.dumps(checkpoint))
expected = list(it)  # the rest of the uninterrupted run

resumed = TokenPacker(DOCS, seq_len=3)
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed))
del resumed  # ... and the resumed run is lost
after_lost_run = list(checkpoint["token_buffer"])

retry = TokenPacker(DOCS, seq_len=3)
retry.load_state_dict(checkpoint)  # the same checkpoint, restored again
again = list(retry)

print(f"checkpoint token_buffer taken {taken['token_buffer']}, after the lost run {after_lost_run}")
print(f"uninterrupted rest {expected}\nretry               {again}")
assert after_lost_run == taken["token_buffer"] and checkpoint == taken
assert again == expected
