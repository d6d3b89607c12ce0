"""MemoryHandler buffers LogRecords whose args are the project's live dict: at flush every line shows its last value."""

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
            log.info("thermostat state %s", state)  # the record keeps args=(state,), formatted later
        buffered.flush()
    finally:
        log.removeHandler(buffered)
        buffered.close()

    lines = stream.getvalue().splitlines()
    print("\n".join(lines))
    assert lines == ["thermostat state {'setpoint': 23}"] * 3, "the bug did not reproduce"


if __name__ == "__main__":
    main()
