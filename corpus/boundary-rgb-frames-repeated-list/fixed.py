"""habitat-lab's PPO evaluation after #209: [[] for _ in range(NUM_PROCESSES)] makes one list per
environment process, so each video holds its own process's frames."""

NUM_PROCESSES = 3


def render(process, step):
    return f"frame of env {process} at step {step}"


def eval_checkpoint(steps):
    rgb_frames = [[] for _ in range(NUM_PROCESSES)]  # type: list[list[str]]
    for step in range(steps):
        for i in range(NUM_PROCESSES):
            rgb_frames[i].append(render(i, step))
    return rgb_frames


videos = eval_checkpoint(2)
print(f"env 0's video has {len(videos[0])} frames, from envs {sorted({f[13] for f in videos[0]})}")
assert len(videos[0]) == 2
