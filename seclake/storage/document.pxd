# C types for document.py when Cython compiles it (setup.py, seclake/native.py).
# The .py file is the definition and runs as it is where nothing is compiled;
# this only declares the attributes of its two classes and the argument and
# local types of the walk, so the compiled walk reads them without the
# interpreter's lookups. Every attribute the classes set must be listed here.

cimport cython

cdef class _Path:
    cdef public object path, ex, kind, text_field
    cdef public dict children, values

cdef class Documents:
    cdef public object dataset, version, shapes, _messages, fields
    cdef public dict _root, _shapes
    cdef public list _nodes
    cdef public Py_ssize_t _cached, _shape_leaves

    cpdef tuple _existence(self, list seen)

    @cython.locals(p=_Path, e=tuple)
    cpdef _walk(self, dict node, dict children, str prefix, Py_ssize_t depth,
                list kw, list kt, dict fr, list seen, list text, dict doc)

    @cython.locals(e=tuple)
    cpdef _leaf(self, _Path p, object value, Py_ssize_t depth,
                list kw, list kt, dict fr, list seen, list text, dict doc)

    cpdef tuple _entry(self, _Path p, object value, object vkey)

@cython.locals(keep=list, at=Py_ssize_t, end=Py_ssize_t, end_of=Py_ssize_t)
cpdef list _outside(list values, str message)

cdef object _put(dict doc, object name, object value)
