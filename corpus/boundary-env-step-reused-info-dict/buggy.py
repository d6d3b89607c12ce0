"""A project environment writes one info dict in place and returns it: every stored info is the last."""


class Walker:
    """Stands in for an environment whose step() hands out its own info dict (Gymnasium#1132)."""

    def __init__(self):
        self.info = {"t": 0, "speed": 0.0}

    def step(self, action):
        self.info["t"] += 1
        self.info["speed"] = action * self.info["t"]
        return float(self.info["t"]), self.info["t"] >= 4, self.info


env, infos, done = Walker(), [], False
while not done:
    reward, done, info = env.step(0.5)
    infos.append(info)

print("steps:", [i["t"] for i in infos])
assert [i["t"] for i in infos] == [4, 4, 4, 4], "the bug did not reproduce"
