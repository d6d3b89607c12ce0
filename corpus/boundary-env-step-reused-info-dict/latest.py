"""One slot holding the latest info: the environment's own dict, read live on purpose."""


class Walker:
    def __init__(self):
        self.info = {"t": 0, "speed": 0.0}

    def step(self, action):
        self.info["t"] += 1
        self.info["speed"] = action * self.info["t"]
        return float(self.info["t"]), self.info["t"] >= 4, self.info


env, state, done = Walker(), {}, False
while not done:
    reward, done, info = env.step(0.5)
    state["info"] = info

assert state["info"]["t"] == 4
