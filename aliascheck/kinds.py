"""The finding kinds and the checks that see them: the one table every output reads.

Each kind has a stable slug (docs/findings.md explains them, docs/reference/kinds.rst
is generated from this table, SARIF names its rules after them), a title, a default severity, a fix line and a help
text. Each check has a phrase saying when it looked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    slug: str
    title: str  # what happened, as a heading
    severity: str  # error | warning | info: the default, before --aliascheck-strict
    hint: str  # the generic fix line, when a bug cannot name a better one
    help: str  # a paragraph for SARIF's rule help and the docs


KINDS: dict[str, Kind] = {k.slug: k for k in (
    Kind("mutation", "handed-over state changed after the handover", "error",
         "return a copy from get_state()/state_dict() (or copy where you keep it), not live state",
         "A snapshot handed over by state_dict()/get_state() (or loaded through reset()/load_state_dict()) "
         "still shares a mutable object with live state, and that object changed while someone kept the "
         "snapshot: a restore from it would be wrong. Return a copy of the live part, or copy where you keep it."),
    Kind("alias", "handed-over state shares live objects with its owner", "warning",
         "the snapshot shares live objects with its owner: return a copy from get_state()",
         "A handed-over snapshot shares a mutable object with its owner's live state. It has not changed yet "
         "(stepping did not change it), so it is a risk, not a proven bug; --aliascheck-strict makes it an error."),
    Kind("class-reset", "cloudpickle.loads reset an existing class", "error",
         "load with aliascheck.fixes.cloudpickle.loads(data, existing_classes='keep')",
         "cloudpickle.loads() of a dynamic class that already exists in this process writes the class's "
         "attributes back to their values at dumps() time (cloudpipe/cloudpickle#439). In threaded workers "
         "this looks like a random race."),
    Kind("unverifiable", "could not be checked", "info",
         "register a fingerprint handler for this type (aliascheck.register_handler)",
         "Part of a snapshot could not be fingerprinted (a lock, a generator, a tensor on another device), "
         "or the harness could not step a node: that part was not checked."),
    Kind("fresh-class", "a fresh process rebuilds the class differently", "error",
         "a fresh process gets the class as pickled, not as it is here: pickle after the class is set up, "
         "or keep mutable state out of class attributes (cloudpickle #313)",
         "Loading the pickle in a fresh interpreter gives a class whose attributes differ from the live class "
         "here: a worker process sees another class than the one tested (cloudpipe/cloudpickle#313)."),
    Kind("resume", "a node restored from a snapshot did not continue the original run", "error",
         "restore everything get_state()/state_dict() returns in reset()/load_state_dict()",
         "aliascheck check restored a fresh node from a snapshot and it did not yield the original run's items "
         "from there on: the state does not describe the position, or the restore ignores part of it."),
    Kind("kept", "a live object the project kept changed behind its back", "error",
         "keep a copy where you keep it (value.detach().clone(), arr.copy(), copy.deepcopy(value))",
         "The project stored a mutable value (a list item, a dict value, an attribute, a view bound to a name) "
         "that someone else still referred to, or whose memory another object owns, and it changed after the "
         "keep without the project writing it: a library rewrote the object (an in-place layer, an optimizer "
         "step, a reused buffer), so what the project kept is not the value it meant to keep."),
    Kind("handed", "a value a library kept was changed by the project", "error",
         "pass a copy (dict(state), buf.copy(), torch.tensor(arr)), or a fresh value to each call",
         "The project passed a mutable value to a library call that kept a reference to it (a buffered log "
         "record, an optimizer's param group, a tensor over an array's memory), then changed it through its own "
         "reference, or passed it again after the library changed it: the library's copy is the project's "
         "live object."),
    Kind("copied", "a shallow copy's shared part was written", "error",
         "copy.deepcopy(...) (or copy the nested parts you change)",
         "The project made an explicit shallow copy (x.copy(), copy.copy(x), np.copy(x)) and then wrote into "
         "a nested mutable part that the copy still shares with its source, while both are in use: the write "
         "changes the source too."),
)}

CHECKS: dict[str, str] = {
    "handover": "the next handover of the same object",
    "delivery": "delivery to the consumer",
    "reentry": "re-entry (reset/load_state_dict)",
    "load": "the load itself: the state it was given, before and after",
    "adopted": "the loading node's next state call or its death: what it kept at the load",
    "teardown": "teardown, after stepping the test's root nodes",
    "last-use": "the test's last use of the name that holds it",
    "harness": "the harness, after stepping the node",
    "alias-probe": "the alias probe at handover",
    "loads": "the live class before and after loads",
    "fresh-process": "loading the pickle in a fresh process",
    "resume": "resume-equivalence: a fresh node restored from the snapshot",
    "send": "the message as it was sent (put, submit, Thread(args=...), dumps)",
    "receive": "the receiver taking the message (get, the thread or work item starting, loads)",
    "receive-shared": "another receiver of the same message, after one had taken it (or teardown)",
    "serialise": "the worker serialising (torch.save, pickle.dump) while it runs the call it was handed",
    "serialise-later": "the worker serialising (torch.save, pickle.dump) what it took off a queue, after another "
                       "task or thread wrote into it",
    "save": "serialising it (torch.save, pickle.dump): what is written is the state as it is then",
    "context": "the task or thread reading a value its context copy shares, changed after the copy was made",
    "default returned": "a call returning a function's default argument again, changed since it returned it to a "
                        "caller that still holds it",
    "default argument": "a function's default argument kept by a new object, or written, while another object it was "
                        "handed to still holds it",
    "repeated": "the project's write into one object a container holds at several positions, addressed by one",
    "context default": "a task or thread reading a ContextVar's default, which every context shares, after "
                       "another one wrote into it",
    "fixture": "a later test receiving a module-, class- or session-scoped fixture's value, changed by an earlier "
               "test that received it",
    "resubmit": "the sender giving an argument to another call, after writing it while an earlier call that was "
                "given it still runs",
    "emptied": "the sender emptying an argument (clear(), del x[:]) while the call that was given it still runs "
               "in another thread, having written nothing into it",
    "mock-read": "the test looking at a mock's recorded call (its args or kwargs, or a comparison or assert_* "
                 "method the change decides): an argument changed after the call",
    "feed": "the feeder thread pickling the message",
    "sync": "the sender's next receive (a reply, a result): it may change the message after that",
    "cache-hit": "a later call of the cache, handing the value out again",
    "cache": "teardown (or the instance's death): the cached value against what was handed out",
    "copy": "the death of a shallow copy or of its original",
    "copy-teardown": "teardown, a shallow copy and its original both alive",
    "next keep": "the next keep at the same line: the value kept there before",
    "kept again": "the same line keeping the very object again, while the keeper still holds it from before",
    "receiver write": "another receiver of the same message object writing into it, while this keeper holds it",
    "pass": "the project passing the value to a call again",
    "write": "the project writing into the value (a shallow copy's shared part, what a library kept)",
}
# One message object sent to several receivers, judged after one of them took it: the fix is a copy each.
SHARED_RECEIPT = "receive-shared"
SHARED_FIX = "send each receiver its own copy (copy.deepcopy(message)); one receiver's change reaches the others"
# A call's tensors or arrays judged when its worker serialises them (torch.save, pickle.dump) while it runs.
SERIALISED = "serialise"
# A container a worker took off a queue, written by another task or thread before the worker serialised it.
SERIALISED_LATE = "serialise-later"
SERIALISED_LATE_FIX = ("put a copy on the queue (copy.deepcopy), or do not change what was handed over until "
                       "the worker has written it")
SERIALISED_FIX = ("snapshot the tensors and arrays before the hand-off (t.detach().clone(), a.copy()): "
                  "the worker serialises them later")
# A call's argument the sender wrote while the call ran, given to another call: judged for the running one.
RESUBMITTED = "resubmit"
# A call's argument its sender emptied while the call runs (a reused buffer): judged for the running call.
EMPTIED = "emptied"
# A mock's recorded call (unittest.mock keeps the arguments), read by the test after an argument changed.
MOCK = "unittest.mock"
MOCK_READ = "mock-read"
KEPT_AGAIN = "kept again"  # one line keeping the very object again: a history of one object
RECEIVER_WRITE = "receiver write"  # one receiver of a message object several took, writing into it
# lru_cache/cache/cached_property values (plugins/caches.py), and the test harness's own cache: a shared
# fixture's value (aliascheck.shared_fixtures)
CACHE_CHECKS = ("cache-hit", "cache", "fixture")
COPY_CHECKS = ("copy", "copy-teardown")  # the parts a copy.copy/dataclasses.replace result shares

# Message channels (the messages adapter's owners): the handover's verb and the fix line.
CHANNELS: dict[str, tuple[str, str]] = {
    "queue.Queue": ("put", "put a copy, or do not change it after put"),
    "queue.SimpleQueue": ("put", "put a copy, or do not change it after put"),
    "multiprocessing.Queue": ("put", "put a copy, or do not change it after put (the feeder thread pickles it later)"),
    "concurrent.futures.ThreadPoolExecutor.submit": ("submit", "submit a copy, or do not change it after submit"),
    "concurrent.futures.ProcessPoolExecutor.submit": (
        "submit", "submit a copy, or do not change it after submit (it is pickled later)"),
    "threading.Thread": (
        "Thread(args=...)", "pass a copy in args/kwargs, or do not change it before the thread starts"),
    "pickle.dumps": ("dumps", "do not change an out-of-band buffer before loads, or pickle it in-band"),
    "asyncio.Queue": ("put", "put a copy, or do not change it after put"),
    MOCK: ("calling the mock", "pass the callee a copy (send(list(pending))), or bind a new value instead of "
           "changing this one (self.pending = []); or let the test record copies (a side_effect that copies "
           "the arguments: unittest.mock's \"Coping with mutable arguments\")"),
    "asyncio.create_task": ("create_task", "give each task its own copy, or do not change it before the task runs"),
    "multiprocessing.Process": (
        "Process(args=...)", "pass a copy in args/kwargs, or do not change it before start() (a fork copies then)"),
    "multiprocessing.pool.Pool": (
        "apply_async/map_async/imap", "pass a copy, or do not change it before its result is taken (get())"),
}

# The state methods whose body decides what leaves an owner: the "let out" line of a bug.
STATE_METHODS = ("get_state", "state_dict", "__getstate__", "get_extra_state")
LOAD_METHODS = ("reset", "load_state_dict", "__setstate__", "set_extra_state")


def kind_of(slug: str) -> Kind:
    """The table row for *slug*; an unknown slug (a third-party adapter's) gets a plain row."""
    found = KINDS.get(slug)
    return found if found is not None else Kind(slug, slug, "error", "", slug)
