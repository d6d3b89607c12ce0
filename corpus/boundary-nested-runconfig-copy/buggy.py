"""A sub-run's config made with original_cfg.copy(): editing its nested groups edits the main run's config."""


def main():
    original_cfg = {
        "runconfig": {
            "groups": {
                "processing": {"ionosphere_phase_correction": {"enabled": True}, "rubbersheet": {"enabled": True}},
                "product_path_group": {"scratch_path": "scratch"},
            }
        }
    }

    iono_cfg = original_cfg.copy()  # a new top-level dict; "runconfig" and everything below is shared
    groups = iono_cfg["runconfig"]["groups"]
    groups["processing"]["ionosphere_phase_correction"]["enabled"] = False  # the sub-run must not recurse
    groups["processing"]["rubbersheet"]["enabled"] = False
    groups["product_path_group"]["scratch_path"] = "scratch/ionosphere"

    main_groups = original_cfg["runconfig"]["groups"]
    print(f"main run after preparing the sub-run: {main_groups}")
    assert main_groups["processing"]["ionosphere_phase_correction"]["enabled"] is False, "the bug did not reproduce"
    assert main_groups["product_path_group"]["scratch_path"] == "scratch/ionosphere"


if __name__ == "__main__":
    main()
