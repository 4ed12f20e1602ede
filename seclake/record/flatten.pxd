# C types for flatten.py when Cython compiles it (setup.py, seclake/native.py).
# The .py file is the definition; this types the arguments and locals of the
# recursions that every record's indexing (leaves) and every rule's field
# lookups (values_at) run through.

cimport cython

cpdef list leaves(dict record, str prefix=*, Py_ssize_t depth=*)

cpdef _walk(dict node, str prefix, Py_ssize_t depth, list out)

@cython.locals(cls=type)
cpdef _leaf(str path, object value, Py_ssize_t depth, list out)

cpdef list values_at(dict record, str path)

@cython.locals(j=Py_ssize_t)
cpdef _lookup(dict node, tuple cuts, Py_ssize_t n, Py_ssize_t i, Py_ssize_t depth, list out)

@cython.locals(cls=type)
cpdef _at(object value, tuple cuts, Py_ssize_t n, Py_ssize_t i, Py_ssize_t depth, list out)
