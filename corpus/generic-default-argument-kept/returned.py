"""The returned shape of the same mistake, as ManageIQ/integration_tests#10274 shows it: a function
appends to its default list and returns it, so a caller's earlier result grows with every later call."""


def pending_checks(check, queue=[]):  # noqa: B006 - the bug itself
    queue.append(check)
    return queue


first = pending_checks("disk")
pending_checks("network")  # another caller, another check list, it thinks
print(f"the first caller's checks: {first}")
assert first == ["disk", "network"], "the bug did not reproduce"
