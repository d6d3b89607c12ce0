"""The sub-run's config is a deep copy: the main run keeps its settings."""

import copy


def main():
    original_cfg = {
        "runconfig": {
            "groups": {
                "processing": {"ionosphere_phase_correction": {"enabled": True}, "rubbersheet": {"enabled": True}},
                "product_path_group": {"scratch_path": "scratch"},
            }
        }
    }

    iono_cfg = copy.deepcopy(original_cfg)
    groups = iono_cfg["runconfig"]["groups"]
    groups["processing"]["ionosphere_phase_correction"]["enabled"] = False
    groups["processing"]["rubbersheet"]["enabled"] = False
    groups["product_path_group"]["scratch_path"] = "scratch/ionosphere"

    main_groups = original_cfg["runconfig"]["groups"]
    print(f"main run after preparing the sub-run: {main_groups}")
    assert main_groups["processing"]["ionosphere_phase_correction"]["enabled"] is True
    assert main_groups["product_path_group"]["scratch_path"] == "scratch"


if __name__ == "__main__":
    main()
