"""Give the Process a copy: the child runs with the config as it was when the job was made."""

import copy
import multiprocessing


def train(config, results):
    results.send(dict(config))
    results.close()


def main():
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    config = {"lr": 0.1, "layers": [64, 64]}
    job = ctx.Process(target=train, args=(copy.deepcopy(config), send))
    config["lr"] = 0.01
    config["layers"].append(32)
    job.start()
    send.close()
    got = receive.recv()
    job.join()
    receive.close()
    print(f"the child ran with {got}")
    assert got == {"lr": 0.1, "layers": [64, 64]}


if __name__ == "__main__":
    main()
