"""load_config() starts from a deep copy of DEFAULT_CONFIG: each call gets the defaults."""

import copy

DEFAULT_CONFIG = {
    "Settings": {"THRESHOLD_PERCENTAGE": 70, "LOG_LEVEL": "INFO"},
    "Paths": {"CACHE_PATH": "/mnt/cache-disks/cache01"},
}


def load_config(overrides, env):
    config = copy.deepcopy(DEFAULT_CONFIG)
    for section, values in overrides.items():
        config[section].update(values)
    if "LOG_LEVEL" in env:
        config["Settings"]["LOG_LEVEL"] = env["LOG_LEVEL"]
    return config


def main():
    first = load_config({"Settings": {"THRESHOLD_PERCENTAGE": 90}}, {"LOG_LEVEL": "DEBUG"})
    second = load_config({}, {})
    print(f"first: {first['Settings']}, second: {second['Settings']}")
    assert first["Settings"] == {"THRESHOLD_PERCENTAGE": 90, "LOG_LEVEL": "DEBUG"}
    assert second["Settings"] == {"THRESHOLD_PERCENTAGE": 70, "LOG_LEVEL": "INFO"}


if __name__ == "__main__":
    main()
