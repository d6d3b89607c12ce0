"""Correct: a mutable dict logged through logging.handlers.QueueHandler, then changed.

Why a naive detector would flag it: `state` is handed to Logger.info and kept in a
LogRecord's args that sits in a queue while the project changes the dict (the same
shape as the MemoryHandler bug in boundary-logging-buffered-mutable-args). But
QueueHandler.prepare() formats the message when the record is enqueued and enqueues a
copy of the record with args=None: the queued record no longer references `state`.
"""

import logging
import logging.handlers
import queue


def main():
    records = queue.SimpleQueue()
    handler = logging.handlers.QueueHandler(records)
    log = logging.getLogger("precision.queue")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(handler)
    try:
        state = {"setpoint": 20}
        for setpoint in (21, 22, 23):
            state["setpoint"] = setpoint
            log.info("thermostat state %s", state)
    finally:
        log.removeHandler(handler)
        handler.close()

    lines = []
    while not records.empty():
        lines.append(records.get_nowait().getMessage())
    print(lines)
    assert lines == [f"thermostat state {{'setpoint': {s}}}" for s in (21, 22, 23)]


if __name__ == "__main__":
    main()
