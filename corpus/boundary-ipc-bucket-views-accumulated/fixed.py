"""A trainer process sends its weights in buckets through one shared-memory buffer; the receiver
accumulates each bucket's tensors until a layer is complete. Fixed: each tensor is cloned out of the
bucket as it is kept (verl#5599, verl#7987)."""

import torch
import torch.multiprocessing as mp

# bucket -> {weight name: (start, end)} in the one buffer
LAYOUT = [{"layer0.a": (0, 4), "layer0.b": (4, 8)}, {"layer1.a": (0, 4), "layer1.b": (4, 8)}]


def send(buffers, ready, go):
    bucket = torch.zeros(8).share_memory_()  # the sender's IPC buffer, reused for every bucket
    buffers.put(bucket)
    for i in range(len(LAYOUT)):
        if not go.wait(30):
            break
        go.clear()
        bucket.copy_(torch.arange(8, dtype=torch.float32) + 10 * (i + 1))  # the next bucket's weights
        ready.set()
    go.wait(30)  # the receiver maps the memory until it is done


def receive(buffer, layout):
    return {name: buffer[start:end] for name, (start, end) in layout.items()}  # views of the buffer


def main():
    ctx = mp.get_context("spawn")
    buffers, ready, go = ctx.Queue(), ctx.Event(), ctx.Event()
    sender = ctx.Process(target=send, args=(buffers, ready, go))
    sender.start()
    try:
        buffer = buffers.get(timeout=60)
        weights = {}
        for layout in LAYOUT:
            go.set()
            if not ready.wait(30):
                raise TimeoutError("the sender did not fill the bucket")
            ready.clear()
            for name, tensor in receive(buffer, layout).items():
                weights[name] = tensor.clone()  # a copy out of the bucket, as the PR does
        first = float(weights["layer0.a"][0])
        del buffer, weights
        return first
    finally:
        go.set()
        sender.join(30)


if __name__ == "__main__":
    got = main()
    print(f"layer0.a[0] as loaded: {got}")
    assert got == 10.0, "the fix did not hold"
