"""The environment returns a new info dict at each step: the history holds every step."""


class Walker:
    def __init__(self):
        self.info = {"t": 0, "speed": 0.0}

    def step(self, action):
        self.info["t"] += 1
        self.info["speed"] = action * self.info["t"]
        return float(self.info["t"]), self.info["t"] >= 4, dict(self.info)


env, infos, done = Walker(), [], False
while not done:
    reward, done, info = env.step(0.5)
    infos.append(info)

assert [i["t"] for i in infos] == [1, 2, 3, 4]
