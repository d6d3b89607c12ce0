import copy
import json


def load(text):
    return json.loads(text)


def without_user(conf, name):
    conf = copy.deepcopy(conf)  # the caller's conf (a shared fixture's value) is left as it was
    conf["users"].remove(name)
    return conf
