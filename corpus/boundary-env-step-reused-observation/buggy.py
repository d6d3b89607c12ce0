"""A project environment refills one observation array and returns it: every stored observation is the last."""

import numpy as np


class Walker:
    """Stands in for an environment whose step() hands out its own observation buffer (dm_control#34)."""

    def __init__(self):
        self.obs = np.zeros(2)
        self.t = 0

    def step(self, action):
        self.t += 1
        self.obs[0] = self.t  # position
        self.obs[1] = action  # velocity
        return self.obs, float(self.t), self.t >= 4


env, history, done = Walker(), [], False
while not done:
    obs, reward, done = env.step(0.5)
    history.append(obs)

print("positions:", [o[0] for o in history])
assert [o[0] for o in history] == [4.0, 4.0, 4.0, 4.0], "the bug did not reproduce"
