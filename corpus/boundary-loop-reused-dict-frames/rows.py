"""drgrib/dotmap#47's maintainer example with a built-in dict: one dict refilled and appended per turn."""

mylist = []
dd = {}
for i in range(10, 40, 10):
    dd["apple"] = i + 10
    dd["baker"] = i - 10
    mylist.append(dd)

print(mylist)
assert mylist[0] == {"apple": 40, "baker": 20}, "the bug did not reproduce"
