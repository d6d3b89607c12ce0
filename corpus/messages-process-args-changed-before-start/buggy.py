"""multiprocessing.Process(args=...) keeps the argument objects; the child gets them as they are at start().

Constructed here and started later: the change made in between (the parent preparing the next
job's config) is what the child runs with. With the fork start method the child inherits the
parent's memory at start(); spawn and forkserver pickle the arguments at start(), the same way.
"""

import multiprocessing


def train(config, results):
    results.send(dict(config))
    results.close()


def main():
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    config = {"lr": 0.1, "layers": [64, 64]}
    job = ctx.Process(target=train, args=(config, send))  # "a deep copy of c is passed", or so it seems
    config["lr"] = 0.01  # the parent prepares the next job with the same dict
    config["layers"].append(32)
    job.start()
    send.close()
    got = receive.recv()
    job.join()
    receive.close()
    print(f"constructed with {{'lr': 0.1, 'layers': [64, 64]}}; the child ran with {got}")
    assert got == {"lr": 0.01, "layers": [64, 64, 32]}, "the bug did not reproduce"


if __name__ == "__main__":
    main()
