# Layout's fields, read by the compiled fast paths straight from its __slots__.
#
# A Layout is a Python class with __slots__; reading a slot from compiled code through
# getattr costs ~20 ns (type lookup, descriptor call), more than the bytecode interpreter's
# specialised LOAD_ATTR, and strided.view reads eight of them a call. A slot's member
# descriptor knows the byte offset of its object pointer in the instance: reading the pointer
# there is what the descriptor does, minus the lookup. Only for an object whose type is
# exactly Layout (the callers check), and only with the GIL: under free-threaded Python another
# thread could replace a slot's object between the read and the incref, so there every field is
# read with getattr (layout_slots gives offsets of -1).
from cpython.object cimport PyObject

cdef extern from *:
    """
    #ifndef Py_T_OBJECT_EX
    #include "structmember.h"
    #define Py_T_OBJECT_EX T_OBJECT_EX
    #endif
    /* The byte offset of a __slots__ member in its instances, as its descriptor reads it; -1
       for anything else, and always under free-threaded Python (see _slots.pxd). */
    static Py_ssize_t st_member_offset(PyObject *descr) {
    #ifdef Py_GIL_DISABLED
        (void)descr;
        return -1;
    #else
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        if (((PyMemberDescrObject *)descr)->d_member->type != Py_T_OBJECT_EX) return -1;
        return ((PyMemberDescrObject *)descr)->d_member->offset;
    #endif
    }
    /* The object in the slot at ``offset`` (borrowed), or NULL when it is unset. */
    static inline PyObject *st_member(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    """
    Py_ssize_t st_member_offset(PyObject* descr)
    PyObject* st_member(PyObject* obj, Py_ssize_t offset) noexcept


# The byte offsets of Layout's slots (-1: read with getattr).
cdef struct LayoutSlots:
    Py_ssize_t sizes, strides, offset, itemsize, bits, size, lo, hi


cdef inline Py_ssize_t _offset_of(object cls, str name):
    descr = cls.__dict__.get(name)
    return -1 if descr is None else st_member_offset(<PyObject*>descr)


cdef inline LayoutSlots layout_slots(object cls):
    """The offsets of ``cls``'s slots (Layout), computed once at a module's import."""
    cdef LayoutSlots s
    s.sizes = _offset_of(cls, "_sizes")
    s.strides = _offset_of(cls, "_strides")
    s.offset = _offset_of(cls, "_offset")
    s.itemsize = _offset_of(cls, "_itemsize")
    s.bits = _offset_of(cls, "_bits")
    s.size = _offset_of(cls, "_size")
    s.lo = _offset_of(cls, "_lo")
    s.hi = _offset_of(cls, "_hi")
    return s


cdef inline object slot(object layout, Py_ssize_t offset, str name):
    """The field ``name`` of an exact Layout: from its slot at ``offset``, or getattr (an
    offset of -1, or an unset slot: getattr raises the AttributeError)."""
    cdef PyObject* p
    if offset >= 0:
        p = st_member(<PyObject*>layout, offset)
        if p != NULL:
            return <object>p
    return getattr(layout, name)
