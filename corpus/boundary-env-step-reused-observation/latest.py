"""The rollout keeps only the latest observation in one slot: it is meant to follow the buffer."""

import numpy as np


class Walker:
    def __init__(self):
        self.obs = np.zeros(2)
        self.t = 0

    def step(self, action):
        self.t += 1
        self.obs[0] = self.t
        self.obs[1] = action
        return self.obs, float(self.t), self.t >= 4


env, state, done = Walker(), {}, False
while not done:
    state["obs"], reward, done = env.step(0.5)

print("latest position:", state["obs"][0])
assert state["obs"][0] == 4.0
