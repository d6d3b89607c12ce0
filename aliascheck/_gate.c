/* The compiled twin of aliascheck/gate.py: the same two questions, the same answers (see there).
 *
 * Nothing here calls code of the program's: exact types are compared by address, a keeper's type
 * is looked up in the runtime's BUFFERS set only when its metatype hashes as `type` does, ids are
 * looked up in the runtime's id sets as ints.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_ATOMS 32

static PyTypeObject *atoms[MAX_ATOMS];
static Py_ssize_t n_atoms = 0;
static PyObject *buffers = NULL, *watched = NULL, *fed = NULL, *held = NULL, *seen = NULL, *last_type = NULL;
static PyObject *generator_loop = NULL, *atom_set = NULL;
static PyObject *unbound = NULL, *unpassed = NULL, *quiet = NULL, *pending = NULL;  /* configure_calls */
static PyObject *own = NULL;  /* configure_calls: the project's own types, kept as the project's structure */
static PyObject *clean = NULL;  /* configure_calls: ids handed out (returned, yielded) and not written since */
static PyObject *callers = NULL;  /* configure_calls: ids of the project's code objects seen calling a keeper */
static int type_in_own(PyTypeObject *kind);
static Py_ssize_t width = 0;
static PyObject *one = NULL;  /* a SEEN entry's repeat */

/* A filter in front of the watched set: a clear bit says an object is not watched without building
 * its id as an int (a hot loop asks about objects nobody watches). Set through watch(), cleared with
 * the set by unwatch(); a set bit sends the question to the set itself. */
#define FILTER_BITS (1u << 20)  /* 128 KiB: a test holding a 40k-node graph watches ~200k ids */
static uint64_t filter[FILTER_BITS / 64];

static size_t
filter_bit(const void *obj)
{
    return ((uintptr_t)obj >> 4) & (FILTER_BITS - 1);
}

static int
is_atom(PyTypeObject *kind)
{
    for (Py_ssize_t i = 0; i < n_atoms; i++) {
        if (atoms[i] == kind) {
            return 1;
        }
    }
    return 0;
}

/* 1: every item is an atom, an object of the project's own type (see keep), or an empty list, dict or
 * set nothing else refers to (``{"i": i, "tags": []}``: new, only this container holds it); 0: not;
 * -1: an error. */
static int
atoms_or_own(PyObject *const *items, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *kind = Py_TYPE(items[i]);
        if (is_atom(kind)) {
            continue;
        }
        if (Py_REFCNT(items[i]) == 1
                && ((kind == &PyList_Type && PyList_GET_SIZE(items[i]) == 0)
                    || (kind == &PyDict_Type && PyDict_GET_SIZE(items[i]) == 0)
                    || (kind == &PySet_Type && PySet_GET_SIZE(items[i]) == 0))) {
            continue;
        }
        int r = own != NULL && PySet_GET_SIZE(own) ? type_in_own(kind) : 0;
        if (r <= 0) {
            return r;
        }
    }
    return 1;
}

/* A dict's values, or a set's items: each an atom or an object of the project's own type (as a
 * list's, atoms_or_own). 1, 0, or -1 on an error. */
static int
dict_of_atoms(PyObject *dict)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        int r = atoms_or_own(&value, 1);
        if (r <= 0) {
            return r;
        }
    }
    return 1;
}

/* 1: every item of an exact set is an atom; 0: not; -1: an error. Iterated at C level (an exact set
 * runs no code of the program's). */
static int
set_of_atoms(PyObject *set)
{
    PyObject *it = PyObject_GetIter(set), *item;
    if (it == NULL) {
        return -1;
    }
    int all = 1;
    while (all > 0 && (item = PyIter_Next(it)) != NULL) {
        all = atoms_or_own(&item, 1);
        Py_DECREF(item);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : all;
}

/* 1: the type is in the set; 0: not; -1: an error. A type whose metatype has its own hash is
 * answered *otherwise* (never hashed here). */
static int
type_in(PyObject *set, PyTypeObject *kind, int otherwise)
{
    if (Py_TYPE(kind)->tp_hash != PyType_Type.tp_hash) {
        return otherwise;
    }
    return PySet_Contains(set, (PyObject *)kind);
}

static int
type_in_own(PyTypeObject *kind)
{
    return type_in(own, kind, 0);
}

/* 1: the keeper's type is a buffer type (or one this gate does not hash: the runtime decides). */
static int
buffer_keeper(PyObject *keeper)
{
    return type_in(buffers, Py_TYPE(keeper), 1);
}

static int
in_id_set(PyObject *set, PyObject *obj)
{
    if (PySet_GET_SIZE(set) == 0) {
        return 0;
    }
    if (set == watched) {
        size_t bit = filter_bit(obj);
        if (!(filter[bit / 64] & ((uint64_t)1 << (bit % 64)))) {
            return 0;
        }
    }
    PyObject *id = PyLong_FromVoidPtr(obj);
    if (id == NULL) {
        return -1;
    }
    int found = PySet_Contains(set, id);
    Py_DECREF(id);
    return found;
}

/* The marked function was called by project code the runtime has seen (callers: ids of code
 * objects): a parameter it keeps is the project's own value (runtime._made). */
static int
from_project_caller(void)
{
    if (callers == NULL || PySet_GET_SIZE(callers) == 0) {
        return 0;
    }
    PyFrameObject *frame = PyEval_GetFrame();  /* borrowed: the marked function's */
    if (frame == NULL) {
        return 0;
    }
    PyFrameObject *back = PyFrame_GetBack(frame);  /* new */
    if (back == NULL) {
        return 0;
    }
    PyCodeObject *code = PyFrame_GetCode(back);  /* new */
    Py_DECREF(back);
    int r = in_id_set(callers, (PyObject *)code);
    Py_DECREF(code);
    return r;
}

/* The fed-loop path (see aliascheck/gate.py), and a parameter's (loop_site -2) when the project
 * called: 1 when the value became the site's last, 0 when the gate goes on, -1 on an error. */
static int
fed_item(PyObject *value, PyObject *keeper, PyObject *loop_site, PyObject *site)
{
    int r;
    if (PyLong_CheckExact(loop_site) && PyLong_AsLong(loop_site) == -2) {
        if ((r = from_project_caller()) <= 0) {
            return r;
        }
    }
    else if (PySet_GET_SIZE(fed) == 0 || (r = PySet_Contains(fed, loop_site)) == 0) {
        return 0;
    }
    if (r < 0 || (r = type_in(held, Py_TYPE(value), 0)) <= 0) {
        return r;
    }
    if ((r = in_id_set(watched, keeper)) != 0 || (r = buffer_keeper(keeper)) != 0) {
        return r < 0 ? -1 : 0;
    }
    PyObject *last = PyDict_GetItemWithError(seen, site);  /* borrowed */
    if (last == NULL && PyErr_Occurred()) {
        return -1;
    }
    /* The site's last is known by id (runtime._Last: never held): the same id may be the same object
     * kept again, which the runtime tells. */
    PyObject *first = (last != NULL && PyTuple_Check(last) && PyTuple_GET_SIZE(last) > 0) ? PyTuple_GET_ITEM(last, 0)
                                                                                          : NULL;
    if (first != NULL && PyLong_CheckExact(first) && PyLong_AsVoidPtr(first) == (void *)value) {
        return 0;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *key = PyLong_FromVoidPtr(value);
    if (key == NULL) {
        return -1;
    }
    if (last != NULL && Py_TYPE(last) == (PyTypeObject *)last_type && Py_REFCNT(last) == 1
            && PyTuple_GET_SIZE(last) == 3 && PyTuple_GET_ITEM(last, 1) == one && PyTuple_GET_ITEM(last, 2) == Py_False) {
        /* SEEN alone holds the site's last (id, 1, False): no one can see it change, so it is
         * reused in place, as zip reuses its result tuple. */
        PyTuple_SET_ITEM(last, 0, key);
        Py_XDECREF(first);
        return 1;
    }
    /* A _Last (a tuple subclass with no slots of its own) made as tuple's own constructor makes one. */
    PyTypeObject *kind = (PyTypeObject *)last_type;
    PyObject *entry = kind->tp_alloc(kind, 3);
    if (entry == NULL) {
        Py_DECREF(key);
        return -1;
    }
    PyTuple_SET_ITEM(entry, 0, key);
    PyTuple_SET_ITEM(entry, 1, Py_NewRef(one));
    PyTuple_SET_ITEM(entry, 2, Py_NewRef(Py_False));
    r = PyDict_SetItem(seen, site, entry);
    Py_DECREF(entry);
    return r < 0 ? -1 : 1;
}

static PyObject *
watched_keeper(PyObject *keeper)
{
    int found = in_id_set(watched, keeper);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

static PyObject *
keep(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs == 4 || nargs > 5 || buffers == NULL) {
        PyErr_SetString(PyExc_TypeError, "keep(value, keeper[, watch[, loop_site, site]]) after configure()");
        return NULL;
    }
    PyObject *value = args[0], *keeper = args[1];
    int watch = nargs < 3 || args[2] == Py_True;
    if (nargs == 5 && args[3] != Py_None) {
        int r = fed_item(value, keeper, args[3], args[4]);
        if (r < 0) {
            return NULL;
        }
        if (r) {
            Py_RETURN_FALSE;
        }
    }
    PyTypeObject *kind = Py_TYPE(value);
    int quiet = is_atom(kind);
    if (!quiet && kind == &PyTuple_Type) {
        quiet = atoms_or_own(((PyTupleObject *)value)->ob_item, PyTuple_GET_SIZE(value));
        if (quiet < 0) {
            return NULL;
        }
    }
    /* The caller's name or temporary, the keeper's slot, the call's argument: 3. */
    else if (!quiet && (kind == &PyList_Type || kind == &PyDict_Type || kind == &PySet_Type)
             && Py_REFCNT(value) <= 3) {
        Py_ssize_t n = kind == &PyList_Type ? PyList_GET_SIZE(value)
                       : kind == &PyDict_Type ? PyDict_GET_SIZE(value) : PySet_GET_SIZE(value);
        if (n <= width) {
            int buffer = buffer_keeper(keeper);
            if (buffer < 0) {
                return NULL;
            }
            if (!buffer) {
                quiet = kind == &PyList_Type ? atoms_or_own(((PyListObject *)value)->ob_item, n)
                        : kind == &PyDict_Type ? dict_of_atoms(value) : set_of_atoms(value);
                if (quiet < 0) {
                    return NULL;
                }
            }
        }
    }
    if (!quiet && own != NULL && PySet_GET_SIZE(own)) {
        /* An object of the project's own type (a tree's node stored into another): its keep is the
         * project's structure; only a write into a watched keeper is looked at. */
        quiet = type_in(own, kind, 0);
        if (quiet < 0) {
            return NULL;
        }
    }
    if (!quiet) {
        Py_RETURN_TRUE;
    }
    if (!watch) {
        Py_RETURN_FALSE;
    }
    return watched_keeper(keeper);
}

static PyObject *
watching(PyObject *module, PyObject *obj)
{
    if (watched == NULL) {
        PyErr_SetString(PyExc_TypeError, "watching(obj) after configure()");
        return NULL;
    }
    return watched_keeper(obj);
}

/* Adds each id of *ids* (ints) to the watched set and to its filter. */
static int
watch_ids(PyObject *ids)
{
    PyObject *it = PyObject_GetIter(ids), *id;
    if (it == NULL) {
        return -1;
    }
    while ((id = PyIter_Next(it)) != NULL) {
        void *address = PyLong_AsVoidPtr(id);
        int r = address == NULL && PyErr_Occurred() ? -1 : PySet_Add(watched, id);
        Py_DECREF(id);
        if (r < 0) {
            Py_DECREF(it);
            return -1;
        }
        size_t bit = filter_bit(address);
        filter[bit / 64] |= (uint64_t)1 << (bit % 64);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *
watch(PyObject *module, PyObject *ids)
{
    if (watched == NULL) {
        PyErr_SetString(PyExc_TypeError, "watch(ids) after configure()");
        return NULL;
    }
    if (watch_ids(ids) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
unwatch(PyObject *module, PyObject *unused)
{
    if (watched != NULL && PySet_Clear(watched) < 0) {
        return NULL;
    }
    memset(filter, 0, sizeof(filter));
    Py_RETURN_NONE;
}

static PyObject *
buffer(PyObject *module, PyObject *obj)
{
    if (buffers == NULL) {
        PyErr_SetString(PyExc_TypeError, "buffer(obj) after configure()");
        return NULL;
    }
    int r = type_in(buffers, Py_TYPE(obj), 0);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *
buffer_or_watched(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || buffers == NULL) {
        PyErr_SetString(PyExc_TypeError, "buffer_or_watched(value, keeper) after configure()");
        return NULL;
    }
    int r = type_in(buffers, Py_TYPE(args[0]), 0);
    if (r == 0) {
        r = in_id_set(watched, args[1]);
    }
    if (r == 0 && args[0] != args[1]) {  /* a keep of a watched value (a message several receivers took) */
        r = in_id_set(watched, args[0]);
    }
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* A returned array or tensor something besides the function's own name refers to (an attribute, a
 * global, a closure): one the function may return again. The caller's name or temporary and the
 * call's argument: 2 for a new one. */
static PyObject *
returning(PyObject *module, PyObject *value)
{
    if (buffers == NULL) {
        PyErr_SetString(PyExc_TypeError, "returning(value) after configure()");
        return NULL;
    }
    if (Py_REFCNT(value) <= 2) {
        Py_RETURN_FALSE;
    }
    int r = type_in(buffers, Py_TYPE(value), 0);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* A returned or yielded value the function itself writes into (paired in the source by the
 * rewriter): an exact dict, list, set or bytearray, or an array or tensor, that something besides
 * the function's own name refers to; with a true second argument, whatever its count. */
static PyObject *
refilled(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2 || buffers == NULL) {
        PyErr_SetString(PyExc_TypeError, "refilled(value[, anyhow]) after configure()");
        return NULL;
    }
    PyObject *value = args[0];
    int r = PyDict_CheckExact(value) || PyList_CheckExact(value) || Py_IS_TYPE(value, &PySet_Type)
            || PyByteArray_CheckExact(value);
    if (!r) {
        r = type_in(buffers, Py_TYPE(value), 0);
        if (r <= 0) {
            return r < 0 ? NULL : Py_NewRef(Py_False);
        }
    }
    if (clean != NULL && PySet_GET_SIZE(clean)) {  /* handed out before and not written since: no refill */
        r = in_id_set(clean, value);
        if (r != 0) {
            return r < 0 ? NULL : Py_NewRef(Py_False);
        }
    }
    if (nargs == 2) {
        int anyhow = PyObject_IsTrue(args[1]);
        if (anyhow < 0) {
            return NULL;
        }
        if (anyhow) {
            Py_RETURN_TRUE;
        }
    }
    return PyBool_FromLong(Py_REFCNT(value) > 2);
}

/* A descriptor whose __get__ is the interpreter's own C code, or no descriptor at all: binding it runs
 * nothing of the program's (gate.py's _plain_entry). */
static int
plain_entry(PyObject *found)
{
    PyTypeObject *kind = Py_TYPE(found);
    return kind->tp_descr_get == NULL || kind == &PyFunction_Type || kind == &PyMethodDescr_Type
        || kind == &PyClassMethodDescr_Type || kind == &PyWrapperDescr_Type || kind == &PyCFunction_Type
        || kind == &PyStaticMethod_Type || kind == &PyClassMethod_Type;
}

/* What owner.name evaluates to, read running nothing of the program's (gate.py's callee_of): a module's
 * dict entry; a class's entry (type's own lookup, no metaclass of the program's); an instance's
 * attribute by the generic lookup when no descriptor of the program's is on the way. New reference, or
 * NULL with no error when that cannot be told so. */
static PyObject *
static_attr(PyObject *owner, PyObject *name)
{
    if (!PyUnicode_CheckExact(name)) {
        return NULL;
    }
    if (PyModule_CheckExact(owner)) {
        PyObject *dict = PyModule_GetDict(owner);  /* borrowed */
        PyObject *found = dict == NULL ? NULL : PyDict_GetItemWithError(dict, name);
        PyErr_Clear();
        return Py_XNewRef(found);
    }
    PyTypeObject *kind = Py_TYPE(owner);
    PyObject *got;
    if (PyType_Check(owner)) {
        if (kind != &PyType_Type) {
            return NULL;  /* a metaclass: its own entries come first */
        }
        PyObject *found = _PyType_Lookup((PyTypeObject *)owner, name);  /* borrowed */
        if (found == NULL || !plain_entry(found)) {
            return NULL;
        }
        got = PyObject_GetAttr(owner, name);
    }
    else {
        if (kind->tp_getattro != PyObject_GenericGetAttr) {
            return NULL;  /* a __getattribute__ or __getattr__ of the program's */
        }
        PyObject *found = _PyType_Lookup(kind, name);  /* borrowed */
        if (found != NULL && !plain_entry(found)) {
            return NULL;
        }
        got = PyObject_GenericGetAttr(owner, name);
    }
    if (got == NULL) {
        PyErr_Clear();
    }
    return got;
}

static PyObject *
bind(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || unbound == NULL) {
        PyErr_SetString(PyExc_TypeError, "bind(value[, receiver[, *names]]) after configure_calls()");
        return NULL;
    }
    int r = type_in(unbound, Py_TYPE(args[0]), 0);
    if (r != 0) {
        return r < 0 ? NULL : Py_NewRef(Py_False);
    }
    if (nargs == 2 && is_atom(Py_TYPE(args[1]))) {
        Py_RETURN_FALSE;
    }
    if (nargs > 2) {  /* bind(value, name, "a", "b"): the receiver name.a.b, read as the statement read it */
        PyObject *receiver = Py_NewRef(args[1]);
        for (Py_ssize_t i = 2; i < nargs && receiver != NULL; i++) {
            Py_SETREF(receiver, static_attr(receiver, args[i]));
        }
        if (receiver == NULL) {
            Py_RETURN_TRUE;  /* not told: the runtime looks */
        }
        int atom = is_atom(Py_TYPE(receiver));
        Py_DECREF(receiver);
        return PyBool_FromLong(!atom);
    }
    Py_RETURN_TRUE;
}

/* What owner.name finds without running anything of the program's (gate.py's _entry): a module's dict
 * entry, or the first entry along a class's MRO (a classmethod's or staticmethod's function). New
 * reference, or NULL (with no error: none, or not a module or a class). */
static PyObject *
entry(PyObject *owner, PyObject *name)
{
    if (!PyUnicode_CheckExact(name)) {
        return NULL;
    }
    if (PyModule_CheckExact(owner)) {
        PyObject *dict = PyModule_GetDict(owner);  /* borrowed */
        PyObject *found = dict == NULL ? NULL : PyDict_GetItemWithError(dict, name);
        return Py_XNewRef(found);
    }
    if (!PyType_Check(owner)) {
        return NULL;
    }
    PyObject *found = _PyType_Lookup((PyTypeObject *)owner, name);  /* borrowed: the MRO's dicts only */
    if (found == NULL) {
        return NULL;
    }
    if (Py_IS_TYPE(found, &PyClassMethod_Type) || Py_IS_TYPE(found, &PyStaticMethod_Type)) {
        return PyObject_GetAttrString(found, "__func__");
    }
    return Py_NewRef(found);
}

/* gate.instance_method(obj, name) is the entry's function (*ref*: (type, name, function, True)), told
 * as the interpreter's own lookup finds it: the class's attribute lookup is the generic one (else
 * the program's __getattribute__ or __getattr__ decides, and nothing is told), its MRO entry for
 * name is that very function (a plain function: no descriptor of the program's runs), and the
 * generic lookup, which reads the instance's own attributes in place first, binds it to obj. Any
 * error is "no": the statement is looked at as before. */
static int
instance_method_is(PyObject *obj, PyObject *ref)
{
    PyObject *kind = PyTuple_GET_ITEM(ref, 0), *name = PyTuple_GET_ITEM(ref, 1), *function = PyTuple_GET_ITEM(ref, 2);
    PyTypeObject *type = Py_TYPE(obj);
    if (!PyWeakref_CheckRefExact(kind) || !PyWeakref_CheckRefExact(function) || !PyUnicode_CheckExact(name)
            || PyWeakref_GET_OBJECT(kind) != (PyObject *)type || type->tp_getattro != PyObject_GenericGetAttr) {
        return 0;
    }
    PyObject *found = _PyType_Lookup(type, name);  /* borrowed */
    if (found == NULL || found != PyWeakref_GET_OBJECT(function) || !PyFunction_Check(found)) {
        PyErr_Clear();
        return 0;
    }
    PyObject *bound = PyObject_GenericGetAttr(obj, name);
    if (bound == NULL) {
        PyErr_Clear();
        return 0;
    }
    int same = PyMethod_Check(bound) && PyMethod_GET_FUNCTION(bound) == found && PyMethod_GET_SELF(bound) == obj;
    Py_DECREF(bound);
    return same;
}

static PyObject *
passes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || unpassed == NULL) {
        PyErr_SetString(PyExc_TypeError, "passes(site, callee, *names) after configure_calls()");
        return NULL;
    }
    int looked = 0;
    for (Py_ssize_t i = 2; i < nargs && !looked; i++) {
        int r = type_in(unpassed, Py_TYPE(args[i]), 0);
        if (r < 0) {
            return NULL;
        }
        looked = !r;
    }
    if (!looked || args[1] == Py_None) {
        return PyBool_FromLong(looked);
    }
    PyObject *ref = PyDict_GetItemWithError(quiet, args[0]);  /* borrowed */
    if (ref == NULL) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_True);
    }
    if (PyTuple_CheckExact(ref) && PyTuple_GET_SIZE(ref) == 4) {  /* obj.name(...): (type, name, function, True) */
        return PyBool_FromLong(!instance_method_is(args[1], ref));
    }
    if (PyTuple_CheckExact(ref) && PyTuple_GET_SIZE(ref) == 3) {  /* owner.name(...): (owner, name, function) */
        PyObject *owner = PyTuple_GET_ITEM(ref, 0), *function = PyTuple_GET_ITEM(ref, 2);
        if (!PyWeakref_CheckRefExact(owner) || !PyWeakref_CheckRefExact(function)
                || PyWeakref_GET_OBJECT(owner) != args[1]) {
            Py_RETURN_TRUE;
        }
        PyObject *found = entry(args[1], PyTuple_GET_ITEM(ref, 1));  /* new or NULL */
        if (found == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            Py_RETURN_TRUE;
        }
        int same = found == PyWeakref_GET_OBJECT(function);
        Py_DECREF(found);
        return PyBool_FromLong(!same);
    }
    if (!PyWeakref_CheckRefExact(ref)) {
        Py_RETURN_TRUE;
    }
    return PyBool_FromLong(PyWeakref_GET_OBJECT(ref) != args[1]);
}

static PyObject *
pended(PyObject *module, PyObject *site)
{
    if (pending == NULL) {
        PyErr_SetString(PyExc_TypeError, "pended(site) after configure_calls()");
        return NULL;
    }
    int r = PyDict_Contains(pending, site);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *
configure_calls(PyObject *module, PyObject *args)
{
    PyObject *unbound_set, *unpassed_set, *quiet_dict, *pending_dict, *own_set = NULL, *clean_set = NULL;
    PyObject *callers_set = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O!O!|O!O!O!:configure_calls", &PySet_Type, &unbound_set, &PySet_Type,
                          &unpassed_set, &PyDict_Type, &quiet_dict, &PyDict_Type, &pending_dict, &PySet_Type, &own_set,
                          &PySet_Type, &clean_set, &PySet_Type, &callers_set)) {
        return NULL;
    }
    Py_XSETREF(own, own_set != NULL ? Py_NewRef(own_set) : NULL);
    Py_XSETREF(clean, clean_set != NULL ? Py_NewRef(clean_set) : NULL);
    Py_XSETREF(callers, callers_set != NULL ? Py_NewRef(callers_set) : NULL);
    Py_XSETREF(unbound, Py_NewRef(unbound_set));
    Py_XSETREF(unpassed, Py_NewRef(unpassed_set));
    Py_XSETREF(quiet, Py_NewRef(quiet_dict));
    Py_XSETREF(pending, Py_NewRef(pending_dict));
    Py_RETURN_NONE;
}

static PyObject *
loop(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3 || fed == NULL) {
        PyErr_SetString(PyExc_TypeError, "loop(iterable, site[, passed]) after configure()");
        return NULL;
    }
    PyObject *iterable = args[0];
    int passed = nargs == 3 ? PyObject_IsTrue(args[2]) : 0;
    if (passed < 0) {
        return NULL;
    }
    if (PyGen_CheckExact(iterable)) {
        return PyObject_Vectorcall(generator_loop, args, nargs, NULL);
    }
    if (passed) {
        /* Over the function's own parameter: a caller the runtime knows for the project's makes the
         * items the project's; any other caller is the runtime's question. */
        int r = from_project_caller();
        if (r < 0) {
            return NULL;
        }
        if (r == 0) {
            return PyObject_Vectorcall(generator_loop, args, nargs, NULL);
        }
        if (PySet_Add(fed, args[1]) < 0) {
            return NULL;
        }
        return Py_NewRef(iterable);
    }
    if (PySet_GET_SIZE(fed) && PySet_Discard(fed, args[1]) < 0) {
        return NULL;
    }
    return Py_NewRef(iterable);
}

static PyObject *
receiver(PyObject *module, PyObject *method)
{
    PyObject *self = NULL;
    if (Py_IS_TYPE(method, &PyMethod_Type)) {
        self = PyMethod_GET_SELF(method);
    }
    else if (Py_IS_TYPE(method, &PyCFunction_Type) || Py_IS_TYPE(method, &PyCMethod_Type)) {
        self = PyCFunction_GET_SELF(method);
    }
    return Py_NewRef(self != NULL ? self : Py_None);
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *atom_types, *buffer_set, *watched_set, *fed_set, *held_set, *seen_dict, *last, *generator;
    Py_ssize_t w;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!nO:configure", &PyFrozenSet_Type, &atom_types, &PySet_Type,
                          &buffer_set, &PySet_Type, &watched_set, &PySet_Type, &fed_set, &PySet_Type, &held_set,
                          &PyDict_Type, &seen_dict, &PyType_Type, &last, &w, &generator)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)last, &PyTuple_Type)
            || ((PyTypeObject *)last)->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "last is a tuple subclass with no slots");
        return NULL;
    }
    if (PySet_GET_SIZE(atom_types) > MAX_ATOMS) {
        PyErr_SetString(PyExc_ValueError, "too many atom types");
        return NULL;
    }
    PyObject *it = PyObject_GetIter(atom_types), *kind;  /* a frozenset's own iterator */
    if (it == NULL) {
        return NULL;
    }
    Py_ssize_t n = 0;
    while ((kind = PyIter_Next(it)) != NULL) {
        int ok = PyType_Check(kind);
        if (ok) {
            atoms[n++] = (PyTypeObject *)kind;  /* alive: atom_set holds it */
        }
        Py_DECREF(kind);
        if (!ok) {
            Py_DECREF(it);
            PyErr_SetString(PyExc_TypeError, "atoms are types");
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        return NULL;
    }
    /* The atoms met most (ints, strings, floats, None, bools) first: is_atom scans in order. */
    PyTypeObject *hot[] = {&PyLong_Type, &PyUnicode_Type, &PyFloat_Type, Py_TYPE(Py_None), &PyBool_Type};
    Py_ssize_t front = 0;
    for (size_t h = 0; h < sizeof(hot) / sizeof(hot[0]); h++) {
        for (Py_ssize_t i = front; i < n; i++) {
            if (atoms[i] == hot[h]) {
                atoms[i] = atoms[front];
                atoms[front++] = hot[h];
                break;
            }
        }
    }
    n_atoms = n;
    Py_XSETREF(atom_set, Py_NewRef(atom_types));  /* keeps the types the array points to alive */
    Py_XSETREF(buffers, Py_NewRef(buffer_set));
    Py_XSETREF(watched, Py_NewRef(watched_set));
    Py_XSETREF(fed, Py_NewRef(fed_set));
    Py_XSETREF(held, Py_NewRef(held_set));
    Py_XSETREF(seen, Py_NewRef(seen_dict));
    Py_XSETREF(last_type, Py_NewRef(last));
    Py_XSETREF(generator_loop, Py_NewRef(generator));
    width = w;
    memset(filter, 0, sizeof(filter));
    PyObject *present = PySequence_List(watched);  /* a set given with ids in it: into the filter */
    if (present == NULL) {
        return NULL;
    }
    int r = watch_ids(present);
    Py_DECREF(present);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}


/* -- flat messages on in-process channels (plugins/message_log.py: _send_flat, _flat_taken) --------
 * The per-message fast path of a dict or list of atoms put on a queue and taken unchanged, which
 * message_log's Python answers the same way, more slowly. A send is recorded here only when its
 * site's context is already in SENDS (message_log made it on an earlier send, in Python): anything
 * else (not flat, sent again, a new site, thread, channel or ledger) answers NotImplemented, and the
 * Python path decides. Nothing here runs code of the program's: exact dicts and lists of atoms, ints
 * as keys. */
static PyObject *flat_table = NULL, *received_table = NULL, *sends_table = NULL;
static PyObject *pickled_flat_table = NULL, *pickled_table = NULL, *pending_flat_table = NULL, *by_serial = NULL;
static PyObject *fed_ids = NULL, *synced_ids = NULL;
static PyObject *str_unchanged = NULL;

static PyObject *
configure_messages(PyObject *module, PyObject *args)
{
    PyObject *f, *r, *s, *pf, *p, *pending, *serials, *fed_set, *synced_set;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!:configure_messages", &PyDict_Type, &f, &PyDict_Type, &r,
                          &PyDict_Type, &s, &PyDict_Type, &pf, &PyDict_Type, &p, &PyDict_Type, &pending,
                          &PyDict_Type, &serials, &PySet_Type, &fed_set, &PySet_Type, &synced_set)) {
        return NULL;
    }
    Py_XSETREF(fed_ids, Py_NewRef(fed_set));
    Py_XSETREF(synced_ids, Py_NewRef(synced_set));
    Py_XSETREF(by_serial, Py_NewRef(serials));
    Py_XSETREF(flat_table, Py_NewRef(f));
    Py_XSETREF(received_table, Py_NewRef(r));
    Py_XSETREF(sends_table, Py_NewRef(s));
    Py_XSETREF(pickled_flat_table, Py_NewRef(pf));
    Py_XSETREF(pickled_table, Py_NewRef(p));
    Py_XSETREF(pending_flat_table, Py_NewRef(pending));
    Py_RETURN_NONE;
}

/* A copy of an exact dict or list whose keys and items are all atoms; NULL without an error: not flat. */
static PyObject *
flat_copy(PyObject *item)
{
    if (n_atoms == 0) {
        return NULL;
    }
    if (PyDict_CheckExact(item)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(item, &pos, &key, &value)) {
            if (!is_atom(Py_TYPE(key)) || !is_atom(Py_TYPE(value))) {
                return NULL;
            }
        }
        return PyDict_Copy(item);
    }
    if (PyList_CheckExact(item)) {
        Py_ssize_t n = PyList_GET_SIZE(item);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!is_atom(Py_TYPE(PyList_GET_ITEM(item, i)))) {
                return NULL;
            }
        }
        return PyList_GetSlice(item, 0, n);
    }
    return NULL;
}

/* The key of a send site in SENDS: the code object's address and the instruction, in one int
 * (message_log._site_key computes the same); 0: none (a frame past the Python path's reach). */
static unsigned long long
site_key(PyObject *past, PyObject **code_out)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyFrameObject *frame = PyEval_GetFrame();  /* borrowed: the wrapper's own */
    if (frame == NULL) {
        return 0;
    }
    PyFrameObject *back = PyFrame_GetBack(frame);
    while (back != NULL) {
        PyCodeObject *code = PyFrame_GetCode(back);
        int skip = PySet_Contains(past, code->co_filename);
        if (skip == 0) {
            int lasti = PyFrame_GetLasti(back);
            Py_DECREF(back);
            uintptr_t address = (uintptr_t)code;
            Py_DECREF(code);  /* alive: the frame's function, and SENDS' context holds it */
            if (lasti < 0 || (lasti >> 1) >= (1 << 20) || (address >> 3) >= ((uintptr_t)1 << 44)) {
                return 0;
            }
            *code_out = (PyObject *)code;
            return ((unsigned long long)(address >> 3) << 20) | (unsigned long long)(lasti >> 1);
        }
        Py_DECREF(code);
        if (skip < 0) {
            PyErr_Clear();
            Py_DECREF(back);
            return 0;
        }
        PyFrameObject *next = PyFrame_GetBack(back);
        Py_DECREF(back);
        back = next;
    }
#endif
    return 0;
}

/* The list of the thread *ident* (NULL: this one) in PENDING_FLAT gets *entry*. */
static int
pending_append(PyObject *entry, PyObject *of)
{
    PyObject *ident = of != NULL ? Py_NewRef(of) : PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (ident == NULL) {
        return -1;
    }
    PyObject *mine = PyDict_GetItemWithError(pending_flat_table, ident);  /* borrowed */
    int r;
    if (mine != NULL && PyList_CheckExact(mine)) {
        r = PyList_Append(mine, entry);
    }
    else if (PyErr_Occurred()) {
        r = -1;
    }
    else {
        PyObject *list = PyList_New(1);
        r = list == NULL ? -1 : 0;
        if (list != NULL) {
            PyList_SET_ITEM(list, 0, Py_NewRef(entry));
            r = PyDict_SetItem(pending_flat_table, ident, list);
            Py_DECREF(list);
        }
    }
    Py_DECREF(ident);
    return r;
}

/* flat_send(item, channel, owner, past, ledger[, pickled]): the entry recorded, or NotImplemented.
 * pickled true: a channel that pickles later (multiprocessing.Queue): recorded in PICKLED_FLAT and
 * on the sending thread's list in PENDING_FLAT, for its next receive. */
static PyObject *
flat_send(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "flat_send(item, channel, owner, past, ledger[, pickled])");
        return NULL;
    }
    PyObject *item = args[0], *channel = args[1], *owner = args[2], *past = args[3], *ledger = args[4];
    int pickled = nargs == 6 && args[5] == Py_True;
    PyObject *table = pickled ? pickled_flat_table : flat_table, *others = pickled ? pickled_table : received_table;
    if (table == NULL || !PyAnySet_Check(past)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *code = NULL;
    unsigned long long site = site_key(past, &code);
    if (site == 0) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *key = PyLong_FromUnsignedLongLong(site);
    if (key == NULL) {
        return NULL;
    }
    PyObject *context = PyDict_GetItemWithError(sends_table, key);  /* borrowed */
    Py_DECREF(key);
    /* (sends, ident, ledger, id(channel), owner, sends.sent, sends.serial): made by message_log._send_flat */
    if (context == NULL || !PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != 7
            || PyTuple_GET_ITEM(context, 2) != ledger || PyTuple_GET_ITEM(context, 4) != owner
            || PyLong_AsVoidPtr(PyTuple_GET_ITEM(context, 3)) != (void *)channel
            || PyLong_AsUnsignedLong(PyTuple_GET_ITEM(context, 1)) != PyThread_get_thread_ident()) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_INCREF(context);  /* an allocation below may collect, and a finalizer change SENDS */
    PyObject *entry = NULL, *id = PyLong_FromVoidPtr(item);
    if (id == NULL) {
        goto done;
    }
    int again = PyDict_Contains(table, id);
    if (again == 0) {
        again = PyDict_Contains(others, id);
    }
    if (again != 0) {  /* sent again before it was taken (or an error) */
        entry = again < 0 ? NULL : Py_NewRef(Py_NotImplemented);
        goto done;
    }
    PyObject *copy = flat_copy(item);
    if (copy == NULL) {
        entry = PyErr_Occurred() ? NULL : Py_NewRef(Py_NotImplemented);
        goto done;
    }
    entry = PyTuple_Pack(3, item, copy, PyTuple_GET_ITEM(context, 6));
    Py_DECREF(copy);
    if (entry != NULL) {
        /* Not the collector's to look at: only aliascheck's tables hold it, and what it holds (a dict or
         * list of atoms, its copy, an int) cannot lead back to it. A tuple of atoms is let go the same way
         * by the collector itself; this one holds a dict, which the collector never lets go of, so that
         * every message in flight would be traversed at each collection of the program's. */
        PyObject_GC_UnTrack(entry);
    }
    if (entry == NULL || PyDict_SetItem(table, id, entry) < 0) {
        Py_CLEAR(entry);
        goto done;
    }
    if (pickled && pending_append(entry, NULL) < 0) {
        PyDict_DelItem(table, id);
        Py_CLEAR(entry);
        goto done;
    }
    PyObject *counter = PyTuple_GET_ITEM(context, 5);
    PyObject *n = Py_TYPE(counter)->tp_iternext != NULL ? Py_TYPE(counter)->tp_iternext(counter) : NULL;
    if (n == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a context's count is an iterator");
        }
        Py_CLEAR(entry);
        goto done;
    }
    Py_DECREF(n);
done:
    Py_XDECREF(id);
    Py_DECREF(context);
    return entry;
}

static int
same_flat(PyObject *flat, PyObject *item)
{
    if (Py_TYPE(flat) != Py_TYPE(item)) {
        return 0;
    }
    if (PyDict_CheckExact(flat)) {
        if (PyDict_GET_SIZE(flat) != PyDict_GET_SIZE(item)) {
            return 0;
        }
        Py_ssize_t i = 0, j = 0;
        PyObject *k1, *v1, *k2, *v2;
        while (PyDict_Next(flat, &i, &k1, &v1)) {
            if (!PyDict_Next(item, &j, &k2, &v2) || k1 != k2 || v1 != v2) {
                return 0;
            }
        }
        return 1;
    }
    Py_ssize_t n = PyList_GET_SIZE(flat);
    if (n != PyList_GET_SIZE(item)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_ITEM(flat, i) != PyList_GET_ITEM(item, i)) {
            return 0;
        }
    }
    return 1;
}

/* One more unchanged look at a flat message of the context *sends*. */
static int
count_unchanged(PyObject *sends)
{
    PyObject *counter = PyObject_GetAttr(sends, str_unchanged);
    if (counter == NULL) {
        return -1;
    }
    PyObject *n = PyIter_Next(counter);
    Py_DECREF(counter);
    if (n == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(n);
    return 0;
}

/* A flat pickled entry (item, copy, serial): its context, borrowed, and its key (new), or 0 when it is
 * no longer recorded (its test ended, or it was judged or taken back). */
static int
recorded(PyObject *entry, PyObject **sends, PyObject **key)
{
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3) {
        return 0;
    }
    *sends = PyDict_GetItemWithError(by_serial, PyTuple_GET_ITEM(entry, 2));
    if (*sends == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    *key = PyLong_FromVoidPtr(PyTuple_GET_ITEM(entry, 0));
    if (*key == NULL) {
        return -1;
    }
    PyObject *now = PyDict_GetItemWithError(pickled_flat_table, *key);
    if (now != entry) {
        Py_CLEAR(*key);
        return PyErr_Occurred() ? -1 : 0;
    }
    return 1;
}

static int
flat_unchanged(PyObject *entry)
{
    PyObject *flat = PyTuple_GET_ITEM(entry, 1);
    return (PyDict_CheckExact(flat) || PyList_CheckExact(flat)) && same_flat(flat, PyTuple_GET_ITEM(entry, 0));
}

/* flat_fed(entry): the feeder pickled a flat message. True: unchanged (fed and counted; dropped, the
 * receiver's now, if a receive of its sender's looked at it already); False: changed; None: no longer
 * recorded. */
static PyObject *
flat_fed(PyObject *module, PyObject *entry)
{
    if (pickled_flat_table == NULL || by_serial == NULL || fed_ids == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *sends = NULL, *key = NULL;
    int r = recorded(entry, &sends, &key);
    if (r <= 0) {
        return r < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (!flat_unchanged(entry)) {
        Py_DECREF(key);
        Py_RETURN_FALSE;
    }
    Py_INCREF(sends);
    int synced = PySet_Contains(synced_ids, key);
    if (synced > 0) {  /* synced, then pickled as sent: the receiver has it, nothing is left to judge */
        synced = PyDict_DelItem(pickled_flat_table, key) == 0 && PySet_Discard(synced_ids, key) >= 0 ? 1 : -1;
    }
    else if (synced == 0) {
        synced = PySet_Add(fed_ids, key) == 0 ? 0 : -1;
    }
    Py_DECREF(key);
    int ok = synced >= 0 && count_unchanged(sends) == 0;
    Py_DECREF(sends);
    return ok ? Py_NewRef(Py_True) : NULL;
}

/* flat_synced(entries): the sending thread received something. Each entry still recorded is looked at
 * once (unchanged: counted), and one the feeder pickled is the receiver's now (dropped). Returns the
 * changed ones, still recorded, for the Python path to judge. */
static PyObject *
flat_synced(PyObject *module, PyObject *entries)
{
    if (!PyList_CheckExact(entries)) {
        PyErr_SetString(PyExc_TypeError, "flat_synced(list)");
        return NULL;
    }
    PyObject *changed = PyList_New(0);
    if (changed == NULL || pickled_flat_table == NULL || by_serial == NULL || fed_ids == NULL) {
        return changed;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i), *sends = NULL, *key = NULL;
        Py_INCREF(entry);
        int r = recorded(entry, &sends, &key);
        if (r > 0) {
            int synced = PySet_Contains(synced_ids, key);
            if (synced == 0) {
                if (!flat_unchanged(entry)) {
                    r = PyList_Append(changed, entry) == 0 ? 0 : -1;
                }
                else {
                    r = count_unchanged(sends) == 0 && PySet_Add(synced_ids, key) == 0 ? 1 : -1;
                }
            }
            else if (synced < 0) {
                r = -1;
            }
            if (r > 0) {
                int fed = PySet_Contains(fed_ids, key);
                if (fed > 0) {
                    r = PyDict_DelItem(pickled_flat_table, key) == 0 && PySet_Discard(fed_ids, key) >= 0
                        && PySet_Discard(synced_ids, key) >= 0 ? 1 : -1;
                }
                else if (fed < 0) {
                    r = -1;
                }
            }
        }
        Py_XDECREF(key);
        Py_DECREF(entry);
        if (r < 0) {
            Py_DECREF(changed);
            return NULL;
        }
    }
    return changed;
}

/* flat_same(flat, item): item holds the very keys and values its flat copy holds, in order. */
static PyObject *
flat_same(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "flat_same(flat, item)");
        return NULL;
    }
    if (!(PyDict_CheckExact(args[0]) || PyList_CheckExact(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "a flat copy is an exact dict or list");
        return NULL;
    }
    return PyBool_FromLong(same_flat(args[0], args[1]));
}

/* flat_taken(item): item was taken off a channel. None: it was not sent flat; True: it was, and is
 * unchanged (counted); else its entry (item, copy, sends), popped, for the Python path to judge. */
static PyObject *
taken(PyObject *item)
{
    if (flat_table == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *id = PyLong_FromVoidPtr(item);
    if (id == NULL) {
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(flat_table, id);
    if (entry == NULL) {
        Py_DECREF(id);
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    Py_INCREF(entry);
    int r = PyDict_DelItem(flat_table, id);
    Py_DECREF(id);
    if (r < 0) {
        Py_DECREF(entry);
        return NULL;
    }
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3) {
        return entry;
    }
    PyObject *sends = by_serial != NULL ? PyDict_GetItemWithError(by_serial, PyTuple_GET_ITEM(entry, 2)) : NULL;
    if (sends == NULL) {  /* its test ended meanwhile (or an error) */
        Py_DECREF(entry);
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    PyObject *flat = PyTuple_GET_ITEM(entry, 1);
    if (!(PyDict_CheckExact(flat) || PyList_CheckExact(flat)) || !same_flat(flat, item)) {
        return entry;
    }
    PyObject *counter = PyObject_GetAttr(sends, str_unchanged);
    Py_DECREF(entry);
    if (counter == NULL) {
        return NULL;
    }
    PyObject *n = PyIter_Next(counter);
    Py_DECREF(counter);
    if (n == NULL) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_True);
    }
    Py_DECREF(n);
    Py_RETURN_TRUE;
}

/* flat_taken never raises: aliascheck's own failure (memory) is no answer, never the receiver's error. */
static PyObject *
flat_taken(PyObject *module, PyObject *item)
{
    PyObject *answer = taken(item);
    if (answer == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return answer;
}

/* -- referrers(targets, skip): who refers to each of many objects, in one scan of the heap ------
 *
 * gc.get_referrers(*objs) visits every tracked object and compares each reference it holds with
 * every target: O(heap x targets). Here the targets sit in an open-addressed table of addresses, so
 * one scan answers for all of them at the cost of one. Nothing of the program's runs: only each
 * object's tp_traverse, as the collector itself calls it. */
typedef struct {
    PyObject **keys;
    Py_ssize_t *slots;  /* the target's index, or -1 for an address to skip */
    size_t mask;
} addresses;

static size_t
address_hash(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * (uintptr_t)0x9E3779B97F4A7C15ull);
}

static Py_ssize_t *
address_find(addresses *table, const void *p)
{
    size_t i = address_hash(p) & table->mask;
    while (table->keys[i] != NULL) {
        if (table->keys[i] == p) {
            return &table->slots[i];
        }
        i = (i + 1) & table->mask;
    }
    return NULL;
}

static void
address_put(addresses *table, PyObject *p, Py_ssize_t slot)
{
    size_t i = address_hash(p) & table->mask;
    while (table->keys[i] != NULL && table->keys[i] != p) {
        i = (i + 1) & table->mask;
    }
    if (table->keys[i] == NULL || slot >= 0) {  /* a target wins over an address to skip */
        table->keys[i] = p;
        table->slots[i] = slot;
    }
}

typedef struct {
    addresses *table;
    PyObject *holder;   /* the object being traversed */
    PyObject *found;    /* list of lists, one per target */
    int failed;
} scan_state;

static int
scan_visit(PyObject *ref, void *arg)
{
    scan_state *state = (scan_state *)arg;
    Py_ssize_t *slot = address_find(state->table, ref);
    if (slot == NULL || *slot < 0) {
        return 0;
    }
    PyObject *list = PyList_GET_ITEM(state->found, *slot);
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n && PyList_GET_ITEM(list, n - 1) == state->holder) {
        return 0;  /* one holder once, however many references it has */
    }
    if (PyList_Append(list, state->holder) < 0) {
        state->failed = 1;
        return 1;
    }
    return 0;
}

static PyObject *
referrers(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "referrers(targets: list, skip: set of ids)");
        return NULL;
    }
    PyObject *targets = args[0], *skip = args[1];
    Py_ssize_t n = PyList_GET_SIZE(targets);
    Py_ssize_t m = PySet_GET_SIZE(skip);
    size_t size = 16;
    while (size < 2 * (size_t)(n + m + 2)) {
        size <<= 1;
    }
    addresses table = {PyMem_Calloc(size, sizeof(PyObject *)), PyMem_Calloc(size, sizeof(Py_ssize_t)), size - 1};
    PyObject *found = PyList_New(n), *everything = NULL, *gc = NULL;
    if (table.keys == NULL || table.slots == NULL || found == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *list = PyList_New(0);
        if (list == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(found, i, list);
        address_put(&table, PyList_GET_ITEM(targets, i), i);
    }
    PyObject *ids = PyObject_GetIter(skip), *key;  /* a set of ints: its iteration runs no user code */
    if (ids == NULL) {
        goto fail;
    }
    while ((key = PyIter_Next(ids)) != NULL) {
        void *p = PyLong_Check(key) ? PyLong_AsVoidPtr(key) : NULL;
        Py_DECREF(key);
        if (p == NULL && PyErr_Occurred()) {
            Py_DECREF(ids);
            goto fail;
        }
        if (p != NULL) {
            address_put(&table, (PyObject *)p, -1);
        }
    }
    Py_DECREF(ids);
    if (PyErr_Occurred()) {
        goto fail;
    }
    address_put(&table, targets, -1);  /* the list of targets refers to them all */
    gc = PyImport_ImportModule("gc");
    everything = gc == NULL ? NULL : PyObject_CallMethod(gc, "get_objects", NULL);
    if (everything == NULL || !PyList_Check(everything)) {
        goto fail;
    }
    address_put(&table, everything, -1);  /* the list of everything holds everything */
    scan_state state = {&table, NULL, found, 0};
    Py_ssize_t total = PyList_GET_SIZE(everything);
    for (Py_ssize_t i = 0; i < total; i++) {
        PyObject *holder = PyList_GET_ITEM(everything, i);
        Py_ssize_t *slot = address_find(&table, holder);
        if (slot != NULL && *slot < 0) {
            continue;
        }
        traverseproc traverse = Py_TYPE(holder)->tp_traverse;
        if (traverse == NULL) {
            continue;
        }
        state.holder = holder;
        traverse(holder, scan_visit, &state);
        if (state.failed) {
            goto fail;
        }
    }
    Py_DECREF(everything);
    Py_DECREF(gc);
    PyMem_Free(table.keys);
    PyMem_Free(table.slots);
    return found;
fail:
    Py_XDECREF(everything);
    Py_XDECREF(gc);
    Py_XDECREF(found);
    PyMem_Free(table.keys);
    PyMem_Free(table.slots);
    return NULL;
}

/* memory_at(address, size, copy_limit): the *size* bytes at *address*, copied into a bytes object when
 * there are at most *copy_limit* of them (a sample a report can name elements from), else a read-only
 * memoryview over them in place (hashed, never kept: it holds nothing alive). What ctypes'
 * ``(c_char * size).from_address(address)`` reads, without a type and an object per size. */
static PyObject *
memory_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "memory_at(address, size, copy_limit)");
        return NULL;
    }
    void *address = PyLong_AsVoidPtr(args[0]);
    Py_ssize_t size = PyLong_AsSsize_t(args[1]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (size < 0 || (address == NULL && size > 0)) {
        PyErr_SetString(PyExc_ValueError, "memory_at: no memory there");
        return NULL;
    }
    if (size <= limit) {
        return PyBytes_FromStringAndSize((const char *)address, size);
    }
    return PyMemoryView_FromMemory((char *)address, size, PyBUF_READ);
}

/* buffer_span(view): (address of its first byte, its length in bytes) of a memoryview, read through
 * the buffer protocol at C level (a memoryview's own: no exporter's Python code runs); None for a
 * released view or one whose memory is not one contiguous span. */
static PyObject *
buffer_span(PyObject *module, PyObject *view)
{
    if (!PyMemoryView_Check(view)) {
        PyErr_SetString(PyExc_TypeError, "buffer_span(memoryview)");
        return NULL;
    }
    Py_buffer buffer;
    if (PyObject_GetBuffer(view, &buffer, PyBUF_SIMPLE) < 0) {  /* released, or not contiguous */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *span = Py_BuildValue("(Nn)", PyLong_FromVoidPtr(buffer.buf), buffer.len);
    PyBuffer_Release(&buffer);
    return span;
}

/* -- reducer(...): the fingerprint pickler's reducer_override, its tensor reads at C speed --------
 *
 * pickle asks the override about every object it has no builtin way for; in a model's state that is
 * one Python call per tensor, then the handler's dozen attribute reads in bytecode. Here a plain CPU
 * tensor (the handler's common case: an exact type of torch's own, a dtype read in place, strided,
 * contiguous) is read as aliascheck.handlers._tensor reads it, with the pickler's *then*, *seen* and
 * *reductions* as fingerprint._Pickler._reduce keeps them. Anything else goes to the Python override,
 * which decides exactly as before. */
enum {
    R_CACHE, R_SLOW, R_PICKLER, R_TENSOR, R_KINDS, R_DTYPES, R_HANDLERS, R_TOKEN, R_SAMPLE, R_SIZE
};
static PyObject *s_then, *s_seen, *s_seen_types, *s_reductions, *s_dtype, *s_shape, *s_is_cpu, *s_layout;
static PyObject *s_is_contiguous, *s_nbytes, *s_data_ptr, *s_cpu, *s_empty, *s_strided, *s_digest, *b_empty;

/* The attribute *name* of *t*, when it is exactly *expected*: 1; 0 when not (or it raised: cleared). */
static int
attr_is(PyObject *t, PyObject *name, PyObject *expected, int call)
{
    PyObject *value = call ? PyObject_CallMethodNoArgs(t, name) : PyObject_GetAttr(t, name);
    if (value == NULL) {
        PyErr_Clear();
        return 0;
    }
    int same = value == expected;
    Py_DECREF(value);
    return same;
}

/* The reduction of a plain CPU tensor, as handlers._tensor makes it; NULL with no error: not one
 * (the Python handler decides); NULL with an error: aliascheck's own failure (memory). */
static PyObject *
tensor_token(PyObject *state, PyObject *t)
{
    PyObject *kind = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, R_KINDS), (PyObject *)Py_TYPE(t));
    PyObject *strided = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, R_HANDLERS), s_strided);
    if (kind == NULL || strided == NULL || strided == Py_None) {
        return NULL;
    }
    PyObject *dtype = PyObject_GetAttr(t, s_dtype);
    if (dtype == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *known = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, R_DTYPES), dtype);  /* borrowed */
    Py_DECREF(dtype);
    if (known == NULL || !PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 2
            || PyTuple_GET_ITEM(known, 1) != Py_True) {
        PyErr_Clear();
        return NULL;
    }
    Py_INCREF(known);  /* its name outlives a finalizer that empties the table */
    PyObject *shape = NULL, *raw = NULL, *digest = NULL, *args = NULL, *token = NULL;
    if (!attr_is(t, s_is_cpu, Py_True, 0) || !attr_is(t, s_layout, strided, 0)
            || !attr_is(t, s_is_contiguous, Py_True, 1)) {
        goto done;
    }
    PyObject *got = PyObject_GetAttr(t, s_shape);
    if (got == NULL) {
        PyErr_Clear();
        goto done;
    }
    /* A torch.Size is a tuple: its items copied, not iterated (PySequence_Tuple would, ~1.4k instructions). */
    shape = PyTuple_Check(got) ? PyTuple_GetSlice(got, 0, PyTuple_GET_SIZE(got)) : PySequence_Tuple(got);
    Py_DECREF(got);
    PyObject *nbytes = PyObject_GetAttr(t, s_nbytes);
    PyObject *address = PyObject_CallMethodNoArgs(t, s_data_ptr);
    Py_ssize_t size = nbytes != NULL && PyLong_CheckExact(nbytes) ? PyLong_AsSsize_t(nbytes) : -1;
    void *at = address != NULL && PyLong_CheckExact(address) ? PyLong_AsVoidPtr(address) : NULL;
    Py_XDECREF(nbytes);
    Py_XDECREF(address);
    if (shape == NULL || size < 0 || (at == NULL && size > 0) || PyErr_Occurred()) {
        PyErr_Clear();
        goto done;
    }
    Py_ssize_t sample = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, R_SAMPLE));
    if (size == 0) {
        raw = Py_NewRef(b_empty);
    }
    else if (size <= sample) {
        raw = PyBytes_FromStringAndSize((const char *)at, size);
    }
    else {
        raw = PyMemoryView_FromMemory((char *)at, size, PyBUF_READ);
    }
    if (raw == NULL) {
        goto done;
    }
    /* handlers.digest_bytes, looked up at each read as the Python handler looks it up */
    PyObject *digest_bytes = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, R_HANDLERS), s_digest);
    if (digest_bytes == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "aliascheck.handlers has no digest_bytes");
        }
        goto done;
    }
    Py_INCREF(digest_bytes);
    digest = PyObject_CallOneArg(digest_bytes, raw);
    Py_DECREF(digest_bytes);
    if (digest == NULL) {
        goto done;
    }
    args = PyTuple_Pack(7, kind, PyTuple_GET_ITEM(known, 0), shape, s_cpu, digest, s_empty,
                        size <= sample ? raw : Py_None);
    if (args != NULL) {
        token = PyTuple_Pack(2, PyTuple_GET_ITEM(state, R_TOKEN), args);
    }
done:
    Py_DECREF(known);
    Py_XDECREF(shape);
    Py_XDECREF(raw);
    Py_XDECREF(digest);
    Py_XDECREF(args);
    return token;
}

/* A list attribute of the pickler's (seen, reductions) gets *value*; absent or None: nothing. */
static int
pickler_append(PyObject *pickler, PyObject *name, PyObject *value)
{
    PyObject *list = PyDict_GetItemWithError(pickler, name);
    if (list == NULL || list == Py_None) {
        return PyErr_Occurred() ? -1 : 0;
    }
    return PyList_Check(list) ? PyList_Append(list, value) : -1;
}

/* The pickler's own answer for *obj*: its Python override (unbound, given the pickler). */
static PyObject *
reduce_slowly(PyObject *state, PyObject *owner, PyObject *obj)
{
    return PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(state, R_SLOW), owner, obj, NULL);
}

static PyObject *reduce_with(PyObject *state, PyObject *owner, PyObject *pickler, PyObject *obj);

static PyObject *
reduce_tensors(PyObject *state, PyObject *obj)
{
    /* The pickler, known weakly: it holds this function, which must not hold it back (a cycle would keep
     * a dropped pickler, and what its memo holds, alive until a collection). */
    PyObject *owner = PyWeakref_GetObject(PyTuple_GET_ITEM(state, R_PICKLER));  /* borrowed */
    if (owner == NULL || owner == Py_None) {
        return owner == NULL ? NULL : Py_NewRef(Py_NotImplemented);
    }
    Py_INCREF(owner);
    PyObject *handler = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, R_CACHE), (PyObject *)Py_TYPE(obj));
    PyObject *result;
    if (handler == NULL || handler != PyTuple_GET_ITEM(state, R_TENSOR)) {
        result = PyErr_Occurred() ? NULL : reduce_slowly(state, owner, obj);
    }
    else {
        PyObject *pickler = PyObject_GenericGetDict(owner, NULL);  /* its attributes: then, seen, ... */
        result = pickler == NULL ? NULL : reduce_with(state, owner, pickler, obj);
        Py_XDECREF(pickler);
    }
    Py_DECREF(owner);
    return result;
}

static PyObject *
reduce_with(PyObject *state, PyObject *owner, PyObject *pickler, PyObject *obj)
{
    PyObject *then = PyDict_GetItemWithError(pickler, s_then);  /* borrowed */
    if (then != NULL && PyDict_CheckExact(then) && PyDict_GET_SIZE(then)) {
        PyObject *id = PyLong_FromVoidPtr(obj);
        if (id == NULL) {
            return NULL;
        }
        PyObject *reduced = PyDict_GetItemWithError(then, id);
        Py_DECREF(id);
        if (reduced != NULL && reduced != Py_None) {
            return Py_NewRef(reduced);
        }
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *token = tensor_token(state, obj);
    if (token == NULL) {
        return PyErr_Occurred() ? NULL : reduce_slowly(state, owner, obj);
    }
    PyObject *seen = PyDict_GetItemWithError(pickler, s_seen), *types = NULL;
    if (seen != NULL && seen != Py_None) {
        types = PyDict_GetItemWithError(pickler, s_seen_types);
        int r = types == NULL ? -1 : PyObject_IsInstance(obj, types);
        if (r > 0 && (pickler_append(pickler, s_seen, obj) < 0 || pickler_append(pickler, s_reductions, token) < 0)) {
            r = -1;
        }
        if (r < 0) {
            Py_DECREF(token);
            return NULL;
        }
    }
    else if (PyErr_Occurred()) {
        Py_DECREF(token);
        return NULL;
    }
    return token;
}

static PyMethodDef reduce_tensors_def = {"reducer_override", reduce_tensors, METH_O,
                                         "reducer_override(obj): see aliascheck.fingerprint"};

/* reducer(cache, slow, pickler_ref, tensor_handler, kinds, dtypes, handlers_dict, token, sample): *slow* the
 * pickler class's Python override (unbound), *pickler_ref* a weak reference to the pickler. */
static PyObject *
reducer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != R_SIZE || !PyDict_Check(args[R_CACHE]) || !PyCallable_Check(args[R_SLOW])
            || !PyWeakref_CheckRef(args[R_PICKLER]) || !PyDict_Check(args[R_KINDS]) || !PyDict_Check(args[R_DTYPES])
            || !PyDict_Check(args[R_HANDLERS]) || !PyLong_Check(args[R_SAMPLE])) {
        PyErr_SetString(PyExc_TypeError,
                        "reducer(cache, slow, pickler_ref, tensor_handler, kinds, dtypes, handlers_dict, token, sample)");
        return NULL;
    }
    PyObject *state = PyTuple_New(nargs);
    if (state == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyTuple_SET_ITEM(state, i, Py_NewRef(args[i]));
    }
    PyObject *fn = PyCFunction_New(&reduce_tensors_def, state);
    Py_DECREF(state);
    return fn;
}

static PyMethodDef methods[] = {
    {"reducer", (PyCFunction)(void (*)(void))reducer, METH_FASTCALL,
     "reducer(...): the fingerprint pickler's reducer_override (see aliascheck.fingerprint)"},
    {"buffer_span", buffer_span, METH_O, "buffer_span(view): see aliascheck.boundary.runtime"},
    {"memory_at", (PyCFunction)(void (*)(void))memory_at, METH_FASTCALL, "memory_at(address, size, copy_limit): see aliascheck.handlers"},
    {"referrers", (PyCFunction)(void (*)(void))referrers, METH_FASTCALL,
     "referrers(targets, skip): for each target, the objects that refer to it (see aliascheck.keepers)"},
    {"keep", (PyCFunction)(void (*)(void))keep, METH_FASTCALL, "keep(value, keeper[, watch[, loop_site, site]]): see aliascheck.gate"},
    {"loop", (PyCFunction)(void (*)(void))loop, METH_FASTCALL, "loop(iterable, site[, passed]): see aliascheck.gate"},
    {"receiver", receiver, METH_O, "receiver(method): see aliascheck.gate"},
    {"watching", watching, METH_O, "watching(obj): see aliascheck.gate"},
    {"watch", watch, METH_O, "watch(ids): see aliascheck.gate"},
    {"unwatch", unwatch, METH_NOARGS, "unwatch(): see aliascheck.gate"},
    {"buffer", buffer, METH_O, "buffer(obj): see aliascheck.gate"},
    {"buffer_or_watched", (PyCFunction)(void (*)(void))buffer_or_watched, METH_FASTCALL,
     "buffer_or_watched(value, keeper): see aliascheck.gate"},
    {"returning", returning, METH_O, "returning(value): see aliascheck.gate"},
    {"refilled", (PyCFunction)(void (*)(void))refilled, METH_FASTCALL, "refilled(value[, anyhow]): see aliascheck.gate"},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL, "bind(value[, receiver]): see aliascheck.gate"},
    {"passes", (PyCFunction)(void (*)(void))passes, METH_FASTCALL, "passes(site, callee, *names): see aliascheck.gate"},
    {"pended", pended, METH_O, "pended(site): see aliascheck.gate"},
    {"configure_calls", configure_calls, METH_VARARGS, "configure_calls(unbound, unpassed, quiet, pending[, own])"},
    {"configure", configure, METH_VARARGS, "configure(atoms, buffers, watched, fed, held, seen, last, width, generator_loop)"},
    {"configure_messages", configure_messages, METH_VARARGS,
     "configure_messages(flat, received, sends, pickled_flat, pickled, pending_flat, by_serial, fed, synced)"},
    {"flat_send", (PyCFunction)(void (*)(void))flat_send, METH_FASTCALL,
     "flat_send(item, channel, owner, past, ledger): see aliascheck.plugins.message_log"},
    {"flat_fed", flat_fed, METH_O, "flat_fed(entry): see aliascheck.plugins.message_log"},
    {"flat_synced", flat_synced, METH_O, "flat_synced(entries): see aliascheck.plugins.message_log"},
    {"flat_same", (PyCFunction)(void (*)(void))flat_same, METH_FASTCALL,
     "flat_same(flat, item): see aliascheck.judge.same_flat"},
    {"flat_taken", flat_taken, METH_O, "flat_taken(item): see aliascheck.plugins.message_log"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliascheck._gate", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__gate(void)
{
    one = PyLong_FromLong(1);
    str_unchanged = PyUnicode_InternFromString("unchanged");
    if (one == NULL || str_unchanged == NULL) {
        return NULL;
    }
    PyObject **names[] = {&s_then, &s_seen, &s_seen_types, &s_reductions, &s_dtype, &s_shape, &s_is_cpu, &s_layout,
                          &s_is_contiguous, &s_nbytes, &s_data_ptr, &s_cpu, &s_empty, &s_strided, &s_digest};
    const char *texts[] = {"then", "seen", "seen_types", "reductions", "dtype", "shape", "is_cpu", "layout",
                           "is_contiguous", "nbytes", "data_ptr", "cpu", "", "_STRIDED", "digest_bytes"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) {
            return NULL;
        }
    }
    if ((b_empty = PyBytes_FromStringAndSize(NULL, 0)) == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
