"""load_config() starts from DEFAULT_CONFIG.copy(): one call's overrides leak into the defaults and the next call."""

DEFAULT_CONFIG = {
    "Settings": {"THRESHOLD_PERCENTAGE": 70, "LOG_LEVEL": "INFO"},
    "Paths": {"CACHE_PATH": "/mnt/cache-disks/cache01"},
}


def load_config(overrides, env):
    config = DEFAULT_CONFIG.copy()  # shallow: "Settings" and "Paths" are the module's dicts
    for section, values in overrides.items():
        config[section].update(values)
    if "LOG_LEVEL" in env:
        config["Settings"]["LOG_LEVEL"] = env["LOG_LEVEL"]
    return config


def main():
    first = load_config({"Settings": {"THRESHOLD_PERCENTAGE": 90}}, {"LOG_LEVEL": "DEBUG"})
    second = load_config({}, {})  # no overrides: expect the defaults
    print(f"first: {first['Settings']}, second: {second['Settings']}")
    assert second["Settings"] == {"THRESHOLD_PERCENTAGE": 90, "LOG_LEVEL": "DEBUG"}, "the bug did not reproduce"


if __name__ == "__main__":
    main()
