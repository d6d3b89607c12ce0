"""The messages adapter: a message the sender changes after handing it over.

Each handover kind gets a buggy test (the sender changes the message after the
handover, ordered so that the receiver cannot take it first: no sleeps) and the
same test corrected (a copy sent), written as a user would, with no ini options.
"""

from __future__ import annotations

import inspect
import json
import multiprocessing.queues
import pickle
import queue
import textwrap
import threading

import pytest
from aliascheck.plugins.messages import aliascheck_install

from aliascheck.config import Options

# Imported before any pytester run: a run that imports numpy first unloads it after, and numpy cannot
# be loaded twice in one process (a later run's import would fail, in whatever order tests run).
pytest.importorskip("numpy")

# A worker thread that raised (an aliascheck wrapper that broke the user's thread) fails the run.
RUN = ("--aliascheck", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnhandledThreadExceptionWarning")


def _literal(text: str) -> str:
    """*text* as an fnmatch pattern matching itself (brackets are character classes there)."""
    return text.replace("[", "[[]")


def _flags(result: pytest.RunResult, test: str, verb: str, change: str, fix: str, owner: str) -> None:
    """*test* failed with one message bug: the sender's line, the change, the channel, the fix."""
    result.stdout.fnmatch_lines([
        f"E   aliascheck.errors.AliasFinding: {test} (*.py:*) sent a message it changed after {verb}: "
        + _literal(change),
    ])
    result.stdout.fnmatch_lines([f"*owner:    {owner}*", f"*fix:      *.py:*: {fix}"])


def test_queue_queue_a_change_after_put_is_the_senders(pytester):
    pytester.makepyfile(test_q="""
        import queue
        import threading

        def consume(q, got):
            got.append(q.get())

        def test_buggy():
            q, got = queue.Queue(), []
            msg = {"step": 1}
            q.put(msg)
            msg["step"] = 2  # the consumer has not started: it gets the changed message
            t = threading.Thread(target=consume, args=(q, got))
            t.start()
            t.join()
            assert got == [{"step": 2}]

        def test_fixed():
            q, got = queue.Queue(), []
            msg = {"step": 1}
            q.put(dict(msg))
            msg["step"] = 2
            t = threading.Thread(target=consume, args=(q, got))
            t.start()
            t.join()
            assert got == [{"step": 1}]
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=1, failed=1)
    _flags(result, "test_buggy", "put", "['step']: 1 -> 2", "put a copy, or do not change it after put",
           "queue.Queue (Queue#1)")
    result.stdout.fnmatch_lines(["*seen by:  the receiver taking the message*(1)"])


def test_a_message_never_received_is_judged_at_teardown(pytester):
    pytester.makepyfile(test_q="""
        import queue

        def test_buggy():
            q = queue.LifoQueue()
            batch = [1, 2]
            q.put_nowait(batch)  # put_nowait calls put: the user's line is this one
            batch.append(3)

        def test_fixed():
            q = queue.LifoQueue()
            batch = [1, 2]
            q.put_nowait(list(batch))
            batch.append(3)
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=1, failed=1)
    _flags(result, "test_buggy", "put", "<root>: list grew from 2 to 3 items (appended 3)",
           "put a copy, or do not change it after put", "queue.Queue (LifoQueue#1)")
    result.stdout.fnmatch_lines(["*seen by:  teardown*(1)", "*handover: test_q.py:6"])


def test_simple_queue_a_change_after_put_is_the_senders(pytester):
    pytester.makepyfile(test_sq="""
        import queue
        from queue import SimpleQueue  # bound at collection, before the adapter is installed

        def test_buggy():
            q = SimpleQueue()
            msg = {"rows": [1]}
            q.put(msg)
            msg["rows"].append(2)
            assert q.get() == {"rows": [1, 2]}

        def test_fixed():
            q = queue.SimpleQueue()
            msg = {"rows": [1]}
            q.put({"rows": list(msg["rows"])})
            msg["rows"].append(2)
            assert q.get() == {"rows": [1]}

        def test_still_the_stdlib_type():
            import _queue
            assert isinstance(_queue.SimpleQueue(), queue.SimpleQueue)
            assert isinstance(queue.SimpleQueue(), _queue.SimpleQueue)
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2, failed=1)
    _flags(result, "test_buggy", "put", "['rows']: list grew from 1 to 2 items (appended 2)",
           "put a copy, or do not change it after put", "queue.SimpleQueue (SimpleQueue#1)")


def test_thread_pool_submit_a_change_before_the_work_item_starts_is_the_senders(pytester):
    pytester.makepyfile(test_tpe="""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        def total(params):
            return sum(params["weights"])

        def run(copy):
            gate = threading.Event()
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(gate.wait)  # the only worker is busy until the gate opens
                params = {"weights": [1, 2]}
                future = pool.submit(total, dict(params, weights=list(params["weights"])) if copy else params)
                params["weights"].append(3)
                gate.set()
                return future.result()

        def test_buggy():
            assert run(copy=False) == 6

        def test_fixed():
            assert run(copy=True) == 3
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: run (test_tpe.py:12) sent a message it changed after "
        "submit: args[0]['weights']: list grew from 2 to 3 items (appended 3)"),
        "*owner:    concurrent.futures.ThreadPoolExecutor.submit (total)",
        "*fix:      test_tpe.py:12: submit a copy, or do not change it after submit",
    ])


def test_one_dict_submitted_again_is_judged_by_who_wrote_it_since_a_worker_took_it(pytester):
    """Who wrote it, for whom, for an argument given to several calls: after a worker took the dict, a
    write by the submitting thread is the sender's change, for a call still running when the sender
    gives the dict to another call, and for a queued call when it starts (a sweep's one config dict
    changed between submits); writes by the workers themselves (a shared progress dict, a found-flag
    the next task reads) are the state they share on purpose."""
    pytester.makepyfile(test_resubmit="""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        def score(gate, cfg):
            gate.wait(5)
            return cfg["w"] * 2

        def sweep(copy):
            gate, cfg = threading.Event(), {"w": 0}
            with ThreadPoolExecutor(max_workers=1) as ex:
                futures = []
                for w in range(3):
                    cfg["w"] = w
                    futures.append(ex.submit(score, gate, dict(cfg) if copy else cfg))
                gate.set()
                return [f.result() for f in futures]

        def fetch(url, progress, lock):
            with lock:
                progress["done"] += 1
                progress["urls"].append(url)

        def search(shard, target, state):
            if state["found"] is None and target in shard:
                state["found"] = target

        def test_buggy_sweep():
            assert sweep(copy=False) == [4, 4, 4]

        def test_fixed_sweep():
            assert sweep(copy=True) == [0, 2, 4]

        def test_progress_written_by_the_workers():
            progress, lock, gate = {"done": 0, "urls": []}, threading.Lock(), threading.Event()
            with ThreadPoolExecutor(max_workers=1) as ex:
                ex.submit(gate.wait, 5)
                for u in "abc":
                    ex.submit(fetch, u, progress, lock)
                gate.set()
            assert progress["done"] == 3

        def stoppable(started, gate, state):
            started.set()
            gate.wait(5)
            return state["stop"]

        def test_stop_flag_the_sender_sets_for_a_running_call():
            started, gate, state = threading.Event(), threading.Event(), {"stop": False}
            with ThreadPoolExecutor(max_workers=1) as ex:
                future = ex.submit(stoppable, started, gate, state)
                started.wait(5)
                state["stop"] = True  # a control flag for the running call: never given to another one
                gate.set()
                assert future.result() is True

        def test_found_flag_written_by_a_worker():
            state = {"found": None}
            with ThreadPoolExecutor(max_workers=1) as ex:
                for shard in ([1, 2], [3, 4], [5]):
                    ex.submit(search, shard, 3, state)
            assert state["found"] == 3
    """)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_resubmit.py::test_buggy_sweep*"])
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: sweep (test_resubmit.py:*) sent a message it changed after "
                 "submit: args[1]['w']: ") + "* -> *"])
    # The first call runs (held by the gate) when the loop changes the dict and submits it again.
    result.stdout.fnmatch_lines(["*seen by:  the sender giving an argument to another call, after writing it*"])


def test_an_argument_its_sender_empties_while_the_call_runs_is_judged_for_that_call(pytester):
    """``Thread(target=upload, args=(rows,)).start(); rows.clear()``: the sender reuses the buffer the
    running thread reads (the upload sees no rows). Judged at the sender's write that empties it
    (``clear()``, ``del x[:]``), for the call still running that was given it and wrote nothing into it.
    Clean: a new list for the next batch, a copy handed over, the thread joined before the clear, a
    results list the thread fills and the sender drains, a flag the sender sets, the same buffer emptied
    by the thread itself, a clear after the call signalled it copied (the sender waited), a clear under
    a lock's ``with``, the last key popped."""
    pytester.makepyfile(test_emptied="""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        def upload(gate, rows, sent):
            gate.wait(5)  # the network: the rows are read after start() returned
            sent.append(list(rows))

        def flush_all(how):
            gate, sent, threads, rows = threading.Event(), [], [], []
            for i in range(4):
                rows.append(i)
                if len(rows) == 2:
                    t = threading.Thread(target=upload, args=(gate, list(rows) if how == "copy" else rows, sent))
                    t.start()
                    threads.append(t)
                    if how == "join":
                        gate.set()
                        t.join()
                    if how == "new":
                        rows = []
                    else:
                        rows.clear()
            gate.set()
            for t in threads:
                t.join()
            return sorted(sent)

        def test_buggy_cleared():
            assert flush_all("clear") == [[], []]

        def test_fixed_new_list():
            assert flush_all("new") == [[0, 1], [2, 3]]

        def test_fixed_copy():
            assert flush_all("copy") == [[0, 1], [2, 3]]

        def test_fixed_joined_first():
            assert flush_all("join") == [[0, 1], [2, 3]]

        def collect(started, gate, out, lock):
            with lock:
                out.append(1)
            started.set()
            gate.wait(5)

        def test_results_the_thread_fills_and_the_sender_drains():
            started, gate, out, lock = threading.Event(), threading.Event(), [], threading.Lock()
            t = threading.Thread(target=collect, args=(started, gate, out, lock))
            t.start()
            started.wait(5)
            with lock:
                got = list(out)
                out.clear()
            gate.set()
            t.join()
            assert got == [1]

        def consume(gate, work):
            gate.wait(5)
            work.clear()

        def test_work_the_call_empties_itself():
            gate, work = threading.Event(), [1, 2]
            with ThreadPoolExecutor(max_workers=1) as ex:
                ex.submit(consume, gate, work)
                gate.set()
            assert work == []

        def test_a_flag_the_sender_sets():
            gate, flags = threading.Event(), {"stop": False}
            t = threading.Thread(target=gate.wait, args=(5,))
            t.start()
            flags["stop"] = True
            gate.set()
            t.join()

        def test_buggy_deleted_slice_under_an_executor():
            gate, rows = threading.Event(), [1, 2, 3]
            with ThreadPoolExecutor(max_workers=1) as ex:
                future = ex.submit(upload, gate, rows, [])
                del rows[:]
                gate.set()
                future.result()

        def copy_first(rows, copied, finish, out):
            mine = list(rows)
            copied.set()
            finish.wait(5)
            out.append(mine)

        def test_the_call_copies_and_signals_then_the_sender_clears():
            rows, copied, finish, out = [1, 2], threading.Event(), threading.Event(), []
            t = threading.Thread(target=copy_first, args=(rows, copied, finish, out))
            t.start()
            copied.wait(5)
            rows.clear()
            finish.set()
            t.join()
            assert out == [[1, 2]]

        def reader(cfg, lock, gate, seen):
            gate.wait(5)
            with lock:
                seen.append(dict(cfg))

        def test_cleared_and_refilled_under_the_readers_lock():
            cfg, lock, gate, seen = {"rate": 1}, threading.Lock(), threading.Event(), []
            t = threading.Thread(target=reader, args=(cfg, lock, gate, seen))
            t.start()
            with lock:
                cfg.clear()
                cfg.update(rate=2)
            gate.set()
            t.join()
            assert seen == [{"rate": 2}]

        def test_the_last_key_popped():
            gate, state = threading.Event(), {"run": True}
            t = threading.Thread(target=gate.wait, args=(5,), kwargs={})
            t2 = threading.Thread(target=reader, args=(state, threading.Lock(), gate, []))
            t.start()
            t2.start()
            state.pop("run")
            gate.set()
            t.join()
            t2.join()
    """)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=9, failed=2)
    result.stdout.fnmatch_lines(["FAILED test_emptied.py::test_buggy_cleared*"])
    result.stdout.fnmatch_lines(["FAILED test_emptied.py::test_buggy_deleted_slice_under_an_executor*"])
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: flush_all (test_emptied.py:13) sent a message it changed after "
                 "Thread(args=...): args[1]: list shrank from 2 to 0 items (removed 0, 1)")])
    result.stdout.fnmatch_lines(["*" + _literal("seen by:  the sender emptying an argument (clear(), del x[:])") + "*"])


def test_one_dict_given_to_a_task_not_started_yet_then_changed_for_the_next(pytester):
    """``msg["to"] = u; asyncio.create_task(send(msg, out))`` in a loop: the tasks run after the loop, so
    each reads the last value. Judged when the object is given to the next task while an earlier one has
    not started (its coroutine's arguments, read from its frame, as at create_task). A dict per task, and
    one results list every task is given and appends to, are clean."""
    pytester.makepyfile(test_tasks="""
        import asyncio
        import sys

        async def send(msg, out):
            await asyncio.sleep(0)
            out.append(msg["to"])

        async def broadcast(users, copy):
            msg, out, tasks = {"to": None}, [], []
            for u in users:
                msg["to"] = u
                tasks.append(asyncio.create_task(send(dict(msg) if copy else msg, out)))
            await asyncio.gather(*tasks)
            return out

        def test_buggy():
            assert asyncio.run(broadcast("abc", copy=False)) == ["c", "c", "c"]

        def test_fixed():
            assert asyncio.run(broadcast("abc", copy=True)) == ["a", "b", "c"]

        def test_one_results_list_for_every_task():
            async def main():
                out = []
                await asyncio.gather(*(send({"to": u}, out) for u in "ab"))
                return out
            assert asyncio.run(main()) == ["a", "b"]

        def test_the_tasks_arguments_are_let_go_when_they_ran():
            async def main(msg, out):
                await asyncio.gather(asyncio.create_task(send(msg, out)), asyncio.create_task(send(msg, out)))
            msg, out = {"to": "a"}, []
            asyncio.run(main(msg, out))
            assert sys.getrefcount(msg) == 2 and sys.getrefcount(out) == 2  # the name, the argument
    """)
    result = pytester.runpytest(*RUN, "-rA", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "E   aliascheck.errors.AliasFinding: broadcast (test_tasks.py:*) sent a message it changed after "
        + _literal("create_task: args[0]['to']: 'a' -> 'b'"),
        "*fix:      test_tasks.py:*: give each task its own copy, or do not change it before the task runs"])


def test_thread_args_a_change_before_start_is_the_senders(pytester):
    pytester.makepyfile(test_thread="""
        import threading

        def record(params, seen):
            seen.append(params["shard"])

        def start_all(copy):
            seen, threads, params = [], [], {"shard": 0}
            for shard in range(3):
                params["shard"] = shard  # one dict reused for every thread
                threads.append(threading.Thread(target=record, args=(dict(params) if copy else params, seen)))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return sorted(seen)

        def test_buggy():
            assert start_all(copy=False) == [2, 2, 2]

        def test_fixed():
            assert start_all(copy=True) == [0, 1, 2]

        def test_an_empty_list_filled_for_the_thread_before_start():
            jobs, out = [], []
            t = threading.Thread(target=lambda js: out.extend(j * 2 for j in js), args=(jobs,))
            jobs.extend([1, 2, 3])  # prepared for this thread: it can read nothing before start()
            t.start()
            t.join()
            assert out == [2, 4, 6]
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: start_all (test_thread.py:10) sent a message it changed "
        "after Thread(args=...): args[0]['shard']: 0 -> 2"),
        "*owner:    threading.Thread (record)",
        "*fix:      test_thread.py:10: pass a copy in args/kwargs, or do not change it before the thread starts",
    ])


def test_pickle_out_of_band_buffer_changed_between_dumps_and_loads(pytester):
    pytester.makepyfile(test_oob="""
        import pickle

        def send_and_receive(change_before_loads):
            frame = bytearray(b"abcd")
            buffers = []
            data = pickle.dumps(pickle.PickleBuffer(frame), protocol=5, buffer_callback=buffers.append)
            if change_before_loads:
                frame[0] = ord("X")  # the buffer views the producer's memory until loads
            received = bytes(pickle.loads(data, buffers=buffers))
            frame[1] = ord("Y")  # after loads: the receiver has what it got
            return received

        def test_buggy():
            assert send_and_receive(change_before_loads=True) == b"Xbcd"

        def test_fixed():
            assert send_and_receive(change_before_loads=False) == b"abcd"

        def test_in_band_is_never_recorded():
            frame = bytearray(b"abcd")
            data = pickle.dumps(frame, protocol=5)
            frame[0] = ord("X")
            assert pickle.loads(data) == b"abcd"
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "E   aliascheck.errors.AliasFinding: send_and_receive (test_oob.py:6) sent a message it changed "
        "after dumps: <buffer>: the 4 bytes the out-of-band buffer views changed after dumps",
        "*owner:    pickle.dumps (PickleBuffer)",
        "*fix:      test_oob.py:6: do not change an out-of-band buffer before loads, or pickle it in-band",
    ])


def test_a_receiver_changing_what_it_received_is_not_a_finding(pytester):
    pytester.makepyfile(test_recv="""
        import queue
        import threading
        from concurrent.futures import ThreadPoolExecutor

        def edit(msg):
            msg["seen"] = True
            return msg

        def test_queue_receiver_edits():
            q = queue.Queue()
            q.put({"seen": False})
            msg = q.get()
            msg["seen"] = True

        def test_thread_receiver_edits_its_args():
            msg = {"seen": False}
            t = threading.Thread(target=edit, args=(msg,))
            t.start()
            t.join()
            assert msg["seen"]

        def test_pool_tasks_append_to_one_results_list():
            results, gate = [], threading.Event()
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(gate.wait)
                for i in range(3):  # each task appends to the list the next one is given
                    pool.submit(results.append, i)
                gate.set()
            assert results == [0, 1, 2]

        def test_queue_given_to_a_thread_fills_up():
            q, out = queue.Queue(), []
            worker = threading.Thread(target=lambda q: out.append(q.get()), args=(q,))
            q.put([1])  # the queue handed to the thread changes: that is what it is for
            worker.start()
            worker.join()
            assert out == [[1]]

        def test_executor_work_edits_its_argument():
            with ThreadPoolExecutor(max_workers=1) as pool:
                assert pool.submit(edit, {"seen": False}).result() == {"seen": True}
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["aliascheck: 5 tests, * 0 warnings, 0 unverifiable"])
    result.stdout.no_fnmatch_line("*aliascheck [[]*")


def test_a_flat_message_is_judged_as_any_other_and_counted_once(pytester):
    # A dict or list of atoms is kept as one small entry, not a Record: the verdicts and the counts
    # must be those of any message.
    pytester.makepyfile(test_flat="""
        import queue

        def test_sent_twice_changed_between():
            q = queue.Queue()
            msg = {"step": 1}
            q.put(msg)
            msg["step"] = 2
            q.put(msg)  # the first one is now {"step": 2} too
            q.get(), q.get()

        def test_made_unflat_after_put():
            q = queue.Queue()
            msg = [1, 2]
            q.put(msg)
            msg.append([3])
            q.get()

        def test_a_full_queue_sends_nothing():
            q = queue.Queue(maxsize=1)
            q.put([0])
            msg = [1]
            try:
                q.put_nowait(msg)
            except queue.Full:
                pass
            msg.append(2)  # never sent: not a finding
            assert q.get() == [0]

        def test_unchanged_many():
            q = queue.Queue()
            for i in range(50):
                q.put({"i": i})
            for i in range(50):
                assert q.get() == {"i": i}
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*test_sent_twice_changed_between (*.py:6) sent a message it changed after put: "
        + _literal("['step']: 1 -> 2"),
        "*test_made_unflat_after_put (*.py:14) sent a message it changed after put: *list grew from 2 to 3 items*",
    ])
    # Recorded: 1 + 1 + 1 + 50 (a send again before the receipt is a check, the raising one is nothing).
    # Checked: the second send, the receipt of the changed list, and each receipt of an unchanged one.
    result.stdout.fnmatch_lines(["aliascheck: 4 tests, 53 handovers recorded, 53 checked*"])


def test_one_message_sent_to_several_receivers_must_reach_each_as_sent(pytester):
    # Two keepers of one object: what the first receiver does to its message is a change for the
    # second, which was sent the same object. Each receiver writing its own copy is clean, and so
    # are receivers that only read; a send after the first receipt is a new send.
    pytester.makepyfile(test_fanout="""
        import copy
        import queue
        import threading

        def stamp(q, name, out):
            msg = q.get()
            msg["seen_by"] = name  # each worker stamps its message in place
            out.append(dict(msg))

        def run(send):
            queues, out = [queue.Queue(), queue.Queue()], []
            send(queues, {"job": 7, "meta": {"tries": 0}})
            for i, q in enumerate(queues):  # one after the other: no timing
                t = threading.Thread(target=stamp, args=(q, f"w{i}", out))
                t.start()
                t.join()
            return out

        def test_buggy():
            def send(queues, msg):
                for q in queues:
                    q.put(msg)
            run(send)

        def test_fixed():
            def send(queues, msg):
                for q in queues:
                    q.put(copy.deepcopy(msg))
            assert [m["seen_by"] for m in run(send)] == ["w0", "w1"]

        def test_readers_only():
            queues = [queue.Queue(), queue.Queue()]
            msg = {"job": 7}
            for q in queues:
                q.put(msg)
            assert [q.get()["job"] for q in queues] == [7, 7]

        def test_sent_again_after_it_was_taken():
            q = queue.Queue()
            msg = {"job": 7}
            q.put(msg)
            q.get()["seen_by"] = "w0"
            q.put(msg)  # sent afresh, as it is now
            assert q.get()["seen_by"] == "w0"

        def test_the_other_receiver_never_took_it():
            queues = [queue.Queue(), queue.Queue()]
            msg = [1, 2]
            for q in queues:
                q.put(msg)
            queues[0].get().append(3)  # judged at teardown, for the second queue's receiver
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        "*send (test_fanout.py:22) sent one message object to several receivers; it changed after one"
        " took it: " + _literal("['seen_by']: <missing> -> 'w0'"),
        "*seen by:  another receiver of the same message, after one had taken it*",
        "*fix:      test_fanout.py:22: send each receiver its own copy (copy.deepcopy(message))*",
    ])
    result.stdout.fnmatch_lines(["*test_the_other_receiver_never_took_it (*.py:*) sent one message object to several"
                                 " receivers; it changed after one took it: *list grew from 2 to 3 items*"])


def test_one_receivers_write_is_a_change_for_another_receiver_that_kept_the_message(pytester):
    # Who wrote it, for whom: one message object on two queues, the archiver takes and keeps it first,
    # then the stamper writes its sequence number into it. The write is the stamper's intent for
    # itself; for the archiver, which stored the message as it was, it is a change. Clean: each its
    # own copy, the archiver writing into what it keeps itself, an archiver that only reads, and one
    # record kept in two indexes of one thread and updated through either.
    pytester.makepyfile(test_two_keepers="""
        import queue
        import threading

        class Archiver:
            def __init__(self):
                self.q, self.stored = queue.Queue(), []

            def take(self, note=False):
                msg = self.q.get()
                self.stored.append(msg)
                if note:
                    msg["archived"] = True  # its own write into what it keeps

        class Reader:
            def __init__(self):
                self.q, self.bodies = queue.Queue(), []

            def take(self):
                msg = self.q.get()
                self.bodies.append(msg["body"])

        def stamp(q, n):
            msg = q.get()
            msg["seq"] = n

        def fan_out(msg, archiver, copy=False, note=False):
            stamper = queue.Queue()
            for q in (archiver.q, stamper):
                q.put(dict(msg) if copy else msg)
            for target, args in ((archiver.take, (note,) if note else ()), (stamp, (stamper, 1))):
                t = threading.Thread(target=target, args=args)  # one after the other: no timing
                t.start()
                t.join()
            return archiver

        def test_the_archived_message_stamped_by_the_other_receiver():
            a = fan_out({"body": 1}, Archiver())
            assert a.stored[0]["seq"] == 1  # what was archived is not what was sent

        def test_each_receiver_its_own_copy():
            a = fan_out({"body": 1}, Archiver(), copy=True)
            assert "seq" not in a.stored[0]

        def test_the_archiver_writing_what_it_keeps():
            msg, other, archiver = {"body": 1}, queue.Queue(), Archiver()
            for q in (other, archiver.q):
                q.put(msg)
            assert other.get()["body"] == 1  # the other receiver reads it first, keeps nothing
            t = threading.Thread(target=archiver.take, args=(True,))
            t.start()
            t.join()
            assert archiver.stored[0]["archived"]

        def test_a_receiver_that_only_reads():
            reader, stamper = Reader(), queue.Queue()
            msg = {"body": 1}
            for q in (reader.q, stamper):
                q.put(msg)
            for target, args in ((reader.take, ()), (stamp, (stamper, 1))):
                t = threading.Thread(target=target, args=args)
                t.start()
                t.join()
            assert reader.bodies == [1]

        def test_one_record_in_two_indexes():
            by_id, items = {}, []
            rec = {"id": 1, "status": "new"}
            by_id[1] = rec
            items.append(rec)
            by_id[1]["status"] = "done"
            assert items[0]["status"] == "done"
    """)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([
        "*self.stored holds a live dict (handed out by self.q.get()), changed after it was kept: "
        + _literal("self.stored[0]['seq']: <missing> -> 1"),
        "*seen by:  another receiver of the same message object writing into it, while this keeper holds it*",
        "FAILED *test_the_archived_message_stamped_by_the_other_receiver*",
    ], consecutive=False)


def test_tensors_and_arrays_handed_to_a_worker_are_judged_when_it_serialises_them(pytester):
    # Late serialisation: a background writer (an executor's work item, a thread's target) that
    # serialises later writes what its arguments hold then. A change of their tensors' or arrays'
    # bytes after the hand-off, before the worker's torch.save/pickle.dump, is the sender's; the
    # worker's own edits of its containers, a snapshot, and a save that ends first are clean.
    pytester.makepyfile(test_late="""
        import io
        import pickle
        import threading
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np
        import torch

        def save_when(free, checkpoint, out):
            assert free.wait(30)  # the writer is busy until then
            checkpoint["saved_by"] = "writer"  # its own key: its intent
            torch.save(checkpoint, out)

        def run(snapshot):
            model = torch.nn.Linear(2, 1)
            free, out = threading.Event(), io.BytesIO()
            state = model.state_dict()
            if snapshot:
                state = {k: v.detach().clone() for k, v in state.items()}
            with ThreadPoolExecutor(1) as pool:
                pool.submit(save_when, free, {"model": state, "step": 1}, out)
                with torch.no_grad():
                    model.bias.add_(1.0)  # the next step, in place
                free.set()

        def test_buggy_executor():
            run(snapshot=False)

        def test_fixed_executor():
            run(snapshot=True)

        def test_saved_before_the_step():
            model = torch.nn.Linear(2, 1)
            with ThreadPoolExecutor(1) as pool:
                pool.submit(torch.save, model.state_dict(), io.BytesIO()).result()
            with torch.no_grad():
                model.bias.add_(1.0)

        def dump_when(free, frames, out):
            assert free.wait(30)
            pickle.dump(frames, out)

        def train_and_save(model, out):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(2):
                opt.zero_grad()
                model(torch.ones(1, 2)).sum().backward()
                opt.step()  # the worker trains the model it was handed: its own writes
            torch.save(model.state_dict(), out)  # what it saves it made itself

        def test_a_background_trainer_saving_its_own_state_dict():
            writer = threading.Thread(target=train_and_save, args=(torch.nn.Linear(2, 1), io.BytesIO()))
            writer.start()
            writer.join()

        def test_buggy_thread_pickles_a_refilled_array():
            frame, free, out = np.zeros(3), threading.Event(), io.BytesIO()
            writer = threading.Thread(target=dump_when, args=(free, [frame], out))
            writer.start()
            frame[:] = 7  # refilled before the writer pickles it
            free.set()
            writer.join()
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        "*run (test_late.py:21) handed over tensors or arrays that changed before the worker serialised them:"
        " *" + _literal("['model']['bias']: tensor bytes changed") + "*",
        "*fix:      test_late.py:21: snapshot the tensors and arrays before the hand-off (t.detach().clone(),*",
    ])
    result.stdout.fnmatch_lines(["*test_buggy_thread_pickles_a_refilled_array (test_late.py:58) handed over tensors or"
                                 " arrays that changed before the worker serialised them: *array bytes changed*"])
    result.stdout.no_fnmatch_line("*saved_by*")



def test_what_a_writer_thread_took_off_a_queue_is_judged_when_it_serialises_it(pytester):
    # Late serialisation through a queue: the writer takes each checkpoint at once (unchanged at the
    # receipt) and pickles it at a flush. The sender's change in between is in the file; a snapshot
    # put on the queue, and a writer that pickles what it took before the change, are clean.
    pytester.makepyfile(test_flush="""
        import pickle
        import queue
        import threading

        import numpy as np

        def writer(inbox, saved, flushed):
            pending = []
            while (item := inbox.get()) is not None:
                if item[0] == "now":
                    saved.append(pickle.dumps(item[1]))
                    flushed.set()
                else:
                    pending.append(item)
                inbox.task_done()
            for _, state in pending:
                saved.append(pickle.dumps(state))  # the flush: serialised only now

        def train(snapshot, when="later"):
            params, inbox, saved, flushed = np.zeros(3), queue.Queue(), [], threading.Event()
            t = threading.Thread(target=writer, args=(inbox, saved, flushed))
            t.start()
            params += 1.0
            inbox.put((when, {"w": params.copy() if snapshot else params}))
            inbox.join()  # the writer has taken it
            if when == "now":
                assert flushed.wait(30)
            params += 1.0  # the next step, in place
            inbox.put(None)
            t.join(30)
            return float(pickle.loads(saved[0])["w"][0])

        def test_live_params_flushed_later():
            assert train(snapshot=False) == 2.0

        def test_snapshot_flushed_later():
            assert train(snapshot=True) == 1.0

        def test_live_params_pickled_as_taken():
            assert train(snapshot=False, when="now") == 1.0
    """)
    result = pytester.runpytest(*RUN)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_flush.py::test_live_params_flushed_later*"])
    result.stdout.fnmatch_lines(["*handed over tensors or arrays that changed before the worker serialised them: "
                                 + _literal("['w']: array bytes changed") + "*"])

def test_a_container_a_writer_took_off_a_queue_is_judged_when_another_thread_wrote_it(pytester):
    # Late serialisation of plain containers: the writer takes the history at once and pickles it at
    # a flush; the trainer appends to it in between. The trainer's write (another thread's) is in the
    # file. Clean: a deep copy put on the queue, the writer's own key added before its dump, and the
    # trainer's append after the flush.
    pytester.makepyfile(test_flush_lists='''
        import copy
        import pickle
        import queue
        import threading

        def writer(inbox, saved, flushed, stamp):
            pending = []
            while (item := inbox.get()) is not None:
                pending.append(item)
                inbox.task_done()
                if item.get("flush_now"):
                    break
            for history in pending:
                if stamp:
                    history["written_by"] = "writer"  # its own key: its intent
                saved.append(pickle.dumps(history))  # serialised only now
            flushed.set()
            while inbox.get() is not None:
                pass

        def train(copied=False, stamp=False, after_flush=False):
            inbox, saved, flushed = queue.Queue(), [], threading.Event()
            t = threading.Thread(target=writer, args=(inbox, saved, flushed, stamp))
            t.start()
            history = {"loss": [0.5, 0.4], "flush_now": after_flush}
            inbox.put(copy.deepcopy(history) if copied else history)
            inbox.join()  # the writer has taken it
            if after_flush:
                assert flushed.wait(30)
            history["loss"].append(0.3)  # the next epoch
            inbox.put(None)
            if not after_flush:
                inbox.put(None)
            t.join(30)
            return pickle.loads(saved[0])["loss"]

        def test_history_appended_before_the_flush():
            assert train() == [0.5, 0.4, 0.3]

        def test_a_copy_put_on_the_queue():
            assert train(copied=True) == [0.5, 0.4]

        def test_the_writer_stamping_what_it_took():
            assert train(stamp=True, after_flush=True) == [0.5, 0.4]

        def test_appended_after_the_flush():
            assert train(after_flush=True) == [0.5, 0.4]
    ''')
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*handed over a value another task or thread changed before the worker serialised it: "
        + _literal("['loss']: list grew from 2 to 3 items") + "*",
        "*fix:*put a copy on the queue (copy.deepcopy)*",
        "FAILED *test_history_appended_before_the_flush*"], consecutive=False)


def test_messages_are_not_recorded_without_the_flag_or_from_library_code(pytester):
    pytester.makepyfile(test_plain="""
        import queue
        from multiprocessing.pool import ThreadPool

        import aliascheck.plugins.messages as messages

        def test_without_the_flag():
            q = queue.Queue()
            msg = {"step": 1}
            q.put(msg)
            msg["step"] = 2
            assert not messages._received and not messages._flat

        def test_a_librarys_own_queues():
            with ThreadPool(1) as pool:  # its task queue is a queue.SimpleQueue, fed by the stdlib
                # (an immutable argument: the apply_async call itself is a message of the project's)
                assert pool.apply_async(sorted, ((3, 1),)).get(timeout=30) == [1, 3]
    """)
    pytester.runpytest("-p", "no:cacheprovider", "-k", "without").assert_outcomes(passed=1)
    result = pytester.runpytest(*RUN, "-k", "library")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["aliascheck: 1 tests, 0 handovers recorded, *"])


PROCESSES = """
    import multiprocessing
    import pickle
    import threading
    from concurrent.futures import ProcessPoolExecutor

    import pytest

    UNPICKLABLE = lambda: 1  # noqa: E731  a lambda pickles by name, and has none

    def total(params):
        return sum(params["weights"])

    def test_mp_queue_buggy():
        q = multiprocessing.Queue()
        msg = {"step": 1}
        q.put(msg)
        msg["step"] = 2  # sent changed or not, depending on the feeder thread
        assert q.get(timeout=30)["step"] in (1, 2)
        q.close()
        q.join_thread()

    def test_mp_queue_fixed():
        q = multiprocessing.Queue()
        msg = {"step": 1}
        q.put(dict(msg))
        msg["step"] = 2
        got = q.get(timeout=30)
        got["step"] = 4  # the receiver's copy is its own
        assert msg == {"step": 2}
        q.close()
        q.join_thread()

    def test_process_pool_buggy():
        with ProcessPoolExecutor(max_workers=1) as pool:
            params = {"weights": [1, 2]}
            future = pool.submit(total, params)
            params["weights"].append(3)
            assert future.result(timeout=60) in (3, 6)

    def test_process_pool_fixed():
        with ProcessPoolExecutor(max_workers=1) as pool:
            params = {"weights": [1, 2]}
            future = pool.submit(total, {"weights": list(params["weights"])})
            params["weights"].append(3)
            assert future.result(timeout=60) == 3

    def test_unpicklable_message_is_unverifiable(capsys):
        q = multiprocessing.Queue()
        q.put({"lock": threading.Lock()})
        q.close()
        q.join_thread()  # the feeder printed its error, as without aliascheck
        assert "TypeError: cannot pickle '_thread.lock' object" in capsys.readouterr().err

    def test_the_users_pickling_error_surfaces_unchanged():
        with ProcessPoolExecutor(max_workers=1) as pool:
            with pytest.raises(pickle.PicklingError, match="Can't pickle <function <lambda>"):
                pool.submit(total, {"weights": UNPICKLABLE}).result(timeout=60)
        with pytest.raises(pickle.PicklingError, match="Can't pickle <function <lambda>"):
            pickle.dumps(UNPICKLABLE, protocol=5, buffer_callback=list().append)
"""


def test_multiprocessing_queue_and_process_pool(pytester):
    """Pickled later: a change after put/submit is the sender's whenever the feeder ran (judged at feed and at
    teardown); an unpicklable message is an unverifiable note, and the user's error is theirs, unchanged."""
    pytester.makepyfile(test_mp=PROCESSES)
    result = pytester.runpytest_subprocess(*RUN, "--aliascheck-report=report.json")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: test_mp_queue_buggy (test_mp.py:16) sent a message"
        " it changed after put: ['step']: 1 -> 2"),
    ])
    result.stdout.fnmatch_lines([
        _literal("E   aliascheck.errors.AliasFinding: test_process_pool_buggy (test_mp.py:*) sent a"
        " message it changed after submit: args[0]['weights']: list grew from 2 to 3 items (appended 3)"),
    ])
    result.stdout.fnmatch_lines([
        "*fix:      test_mp.py:16: put a copy, or do not change it after put (the feeder thread pickles it later)",
    ])
    result.stdout.fnmatch_lines([
        "*fix:      test_mp.py:*: submit a copy, or do not change it after submit (it is pickled later)",
    ])
    result.stdout.fnmatch_lines(["aliascheck: 6 tests, * 2 bugs (2 occurrences in 2 tests), 0 warnings, "
                                 "2 unverifiable"])
    # Two notes: the lock (seen at put, with its path) and the lambda (seen when the feeder failed to pickle it).
    report = json.loads((pytester.path / "report.json").read_text())
    notes = {(f["owner"], f["path"], f["check"]): f["before"]
             for f in report["findings"] if f["kind"] == "unverifiable"}
    assert notes.keys() == {("multiprocessing.Queue", "['lock']", "send"),
                            ("concurrent.futures.ProcessPoolExecutor.submit", "<message>", "feed")}
    assert notes[("concurrent.futures.ProcessPoolExecutor.submit", "<message>", "feed")].startswith(
        "PicklingError: Can't pickle <function <lambda>")


SYNCHRONIZED = """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor


    def work(cfg):
        return cfg["n"] * 2


    def echo(q_in, q_out):
        while (item := q_in.get()) is not None:
            q_out.put(item["n"])


    def test_result_then_change():
        with ProcessPoolExecutor(1, mp_context=mp.get_context("fork")) as ex:
            cfg = {"n": 1}
            assert ex.submit(work, cfg).result() == 2
            cfg["n"] = 2  # the worker has had it: the result says so
            assert ex.submit(work, cfg).result() == 4


    def test_reply_then_change():
        ctx = mp.get_context("fork")
        q_in, q_out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=echo, args=(q_in, q_out))
        p.start()
        msg = {"n": 1}
        q_in.put(msg)
        assert q_out.get(timeout=60) == 1
        msg["n"] = 2  # answered: the receiver has it
        q_in.put(msg)
        assert q_out.get(timeout=60) == 2
        q_in.put(None)
        p.join(60)


    def test_change_before_the_reply():
        ctx = mp.get_context("fork")
        q_in, q_out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=echo, args=(q_in, q_out))
        p.start()
        msg = {"n": 1}
        q_in.put(msg)
        msg["n"] = 2  # the feeder may not have pickled it yet: 1 or 2 is sent
        q_out.get(timeout=60)
        q_in.put(None)
        p.join(60)
"""


def test_a_sender_may_change_a_message_once_it_has_received_a_reply(pytester):
    """A pickled message is the sender's until the feeder pickled it and the sender received something
    after the send (a result, a reply): a change before that is the race, after it is correct code."""
    pytester.makepyfile(test_sync=textwrap.dedent(SYNCHRONIZED))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_change_before_the_reply*"])


def test_install_nests_keeps_signatures_and_undoes_everything():
    targets = [(queue.Queue, "put"), (queue.Queue, "get"), (multiprocessing.queues.Queue, "put"),
               (threading.Thread, "__init__"), (pickle, "dumps"), (pickle, "loads")]
    before = {(t, n): getattr(t, n) for t, n in targets}
    simple = queue.SimpleQueue
    outer = aliascheck_install(Options(enabled=True))
    inner = aliascheck_install(Options(enabled=True))  # pytester runs pytest inside pytest
    try:
        for t, n in targets:
            assert getattr(t, n) is not before[(t, n)]
            assert inspect.signature(getattr(t, n)) == inspect.signature(before[(t, n)])
        made = queue.SimpleQueue()
        assert made.__class__ is not simple and isinstance(made, simple) and isinstance(simple(), queue.SimpleQueue)
        inner()
        assert queue.Queue.put is not before[(queue.Queue, "put")]  # the outer install still stands
    finally:
        inner()  # an undo runs once
        outer()
    assert {(t, n): getattr(t, n) for t, n in targets} == before
    assert queue.SimpleQueue is simple


ASYNC_QUEUE = """
    import asyncio

    def test_async_queue():
        async def main():
            q = asyncio.Queue()
            msg = {"step": 1}
            await q.put(SENT)
            msg["step"] = 2          # the consumer has not taken it yet
            return await q.get()
        asyncio.run(main())
"""


@pytest.mark.parametrize(("sent", "outcome"), [("msg", "failed"), ("dict(msg)", "passed")])
def test_an_asyncio_queue_item_changed_after_put(pytester, sent, outcome):
    """asyncio.Queue: the adapter installs once asyncio is imported; a change after put is the
    sender's, a copy put stays clean."""
    pytester.makepyfile(test_aq=textwrap.dedent(ASYNC_QUEUE).replace("SENT", sent))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*sent a message it changed after put*"])


PROCESS_AND_POOL = """
    import multiprocessing as mp

    def work(cfg):
        return cfg["lr"]

    def test_process_args_changed_before_start():
        cfg = {"lr": 0.1}
        p = mp.get_context("fork").Process(target=work, args=(SENT,))
        cfg["lr"] = 0.2            # before start(): the child gets 0.2
        p.start(); p.join(30)
        cfg["lr"] = 0.3            # after start(): the child has its copy; the parent's again

    def test_pool_apply_async():
        cfg = {"lr": 0.1}
        with mp.get_context("fork").Pool(1) as pool:
            r = pool.apply_async(work, (SENT,))
            got = r.get(timeout=30)
            cfg["lr"] = 0.4        # after the result was taken: the sender's again
        assert got == 0.1
"""


@pytest.mark.parametrize(("sent", "failed"), [("cfg", 1), ("dict(cfg)", 0)])
def test_process_arguments_until_start_and_pool_arguments_until_the_result(pytester, sent, failed):
    """Process(args=...) is judged at start() (a change before it is the sender's, one after is not);
    Pool.apply_async arguments until the result is taken."""
    pytester.makepyfile(test_mp=textwrap.dedent(PROCESS_AND_POOL).replace("SENT", sent))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=2 - failed, failed=failed)
    if failed:
        result.stdout.fnmatch_lines(["*FAILED test_mp.py::test_process_args_changed_before_start*"])


@pytest.mark.parametrize("disable", ["messages", "all"])
def test_a_disabled_adapter_judges_nothing_and_the_run_goes_on(pytester, disable):
    """``aliascheck_disable`` leaves the adapter out: the same buggy put is then not judged,
    and with ``all`` (no adapter at all, not even the child processes' list of them) the run
    still starts and the core's own checks stay on."""
    pytester.makepyfile(test_q="""
        import queue

        class Node:
            def __init__(self):
                self.seen = []

            def state_dict(self):
                return {"seen": self.seen}

            def load_state_dict(self, state):
                self.seen = list(state["seen"])

        def test_put_then_changed():
            q = queue.Queue()
            msg = {"step": 1}
            q.put(msg)
            msg["step"] = 2
            assert q.get() == {"step": 2}

        def test_node_shares_its_list():
            node = Node()
            state = node.state_dict()
            node.seen.append(1)
            assert state == {"seen": [1]}
            node.state_dict()  # the node's next handover: the earlier one, still held, changed
    """)
    result = pytester.runpytest_subprocess(*RUN, "-o", f"aliascheck_disable={disable}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_q.py::test_node_shares_its_list*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_a_message_taken_off_its_queue_another_way_and_a_thread_prepared_before_start(pytester):
    """A live queue that no longer holds a message was emptied by the program another way than ``get()``
    (an event loop's ``heapq.heappop(q.queue)`` under ``q.mutex``, python-statemachine's engine): when it
    was taken is not known, so it is not judged at teardown; one still queued is. A thread's argument
    changed before ``start()`` is judged (the child gets it as it is then), but for a handle to the child
    itself that the sender sets once the child exists (``inv.thread = t``): its preparation."""
    pytester.makepyfile(test_taken="""
        import heapq
        import queue
        import threading

        class Trigger:
            def __init__(self, model):
                self.model = model
            def __lt__(self, other):
                return False

        def test_taken_with_heappop():
            model, q = {"state": "a"}, queue.PriorityQueue()
            q.put(Trigger(model))
            with q.mutex:
                trigger = heapq.heappop(q.queue)
            trigger.model["state"] = "b"
            assert model["state"] == "b"

        def test_buggy_still_queued():
            q = queue.PriorityQueue()
            events = [{"state": "a"}]
            q.put(events)
            events[0]["state"] = "b"
            assert q.qsize() == 1

        class Invocation:
            def __init__(self):
                self.thread, self.done = None, False

        def run(inv):
            inv.done = True

        def test_prepared_before_start():
            inv = Invocation()
            t = threading.Thread(target=run, args=(inv,))
            inv.thread = t
            t.start()
            t.join()
            assert inv.done

        def work(row, out):
            out.append(dict(row))

        def test_buggy_one_row_for_threads_made_in_a_loop():
            row, out, threads = {}, [], []
            for i in range(2):
                row["i"] = i
                threads.append(threading.Thread(target=work, args=(row, out)))
            for t in threads:
                t.start()
                t.join()
            assert out == [{"i": 1}, {"i": 1}]
    """)
    result = pytester.runpytest(*RUN, "-rA")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["FAILED test_taken.py::test_buggy_still_queued*",
                                 "FAILED test_taken.py::test_buggy_one_row_for_threads_made_in_a_loop*"])
