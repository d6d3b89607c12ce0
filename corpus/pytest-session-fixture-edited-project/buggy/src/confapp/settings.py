import json


def load(text):
    return json.loads(text)


def without_user(conf, name):
    conf["users"].remove(name)  # edits the conf it was given: the session fixture's one dict
    return conf
