"""habitat-lab's PPO evaluation before #209: one frame list per environment process, made as
[[]] * NUM_PROCESSES. The repetition puts one list at every position, so appending process i's frame
to rgb_frames[i] appends it to every process's video."""

NUM_PROCESSES = 3


def render(process, step):
    return f"frame of env {process} at step {step}"


def eval_checkpoint(steps):
    rgb_frames = [[]] * NUM_PROCESSES  # type: list[list[str]]
    for step in range(steps):
        for i in range(NUM_PROCESSES):
            rgb_frames[i].append(render(i, step))
    return rgb_frames


videos = eval_checkpoint(2)
print(f"env 0's video has {len(videos[0])} frames, from envs {sorted({f[13] for f in videos[0]})}")
assert len(videos[0]) == 2 * NUM_PROCESSES, "the bug did not reproduce"
