"""The project logs a snapshot of its dict: the buffered records show the state at each call."""

import io
import logging
import logging.handlers


def main():
    stream = io.StringIO()
    target = logging.StreamHandler(stream)
    buffered = logging.handlers.MemoryHandler(capacity=100, flushLevel=logging.ERROR, target=target)
    log = logging.getLogger("boundary.thermostat")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(buffered)
    try:
        state = {"setpoint": 20}
        for setpoint in (21, 22, 23):
            state["setpoint"] = setpoint
            log.info("thermostat state %s", dict(state))  # a snapshot the project never changes
        buffered.flush()
    finally:
        log.removeHandler(buffered)
        buffered.close()

    lines = stream.getvalue().splitlines()
    print("\n".join(lines))
    assert lines == [f"thermostat state {{'setpoint': {s}}}" for s in (21, 22, 23)]


if __name__ == "__main__":
    main()
