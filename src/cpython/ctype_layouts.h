/* The layouts of module-private C types (structs of Modules/ .c files and of numpy, in no header
 * scry can compile against), as data: one table per module, in the generated files
 * ctype_layout_<module>.c, made by tests/tools/probe_ctypes.py from objects of known content in
 * each interpreter and checked against them by tests/e2e/test_ctype_layouts.py. A row is one
 * interpreter build (minor, free-threaded): a free-threaded build's row holds its own offsets
 * (behind the 32-byte header). Every offset is in bytes from the object's (or block's) start;
 * 0 is "no such field in this version" (offset 0 is ob_refcnt). */
#ifndef SCRY_CPYTHON_CTYPE_LAYOUTS_H
#define SCRY_CPYTHON_CTYPE_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* collections.deque: items in blocks of block_slots slots at block_items, linked forward at
 * block_next (backward at 0); len is ob_size. */
struct ctl_deque {
    int minor;
    bool ft;
    uint16_t basicsize, len, leftblock, leftindex;
    uint16_t block_size, block_items, block_slots, block_next;
};

struct ctl_defaultdict {
    int minor;
    bool ft;
    uint16_t basicsize, default_factory;
};

/* collections.OrderedDict: a dict (used is its ma_used) plus od_fast_nodes, a node pointer per
 * slot of the dict's index (fast_nodes_size of them), and a node of node_size bytes per item. */
struct ctl_odict {
    int minor;
    bool ft;
    uint16_t basicsize, used, fast_nodes, fast_nodes_size, node_size;
};

/* _io.BufferedReader, BufferedWriter and BufferedRandom (one struct): the raw file and the
 * read/write buffer (char *, NULL once closed) of buffer_size bytes. */
struct ctl_buffered {
    int minor;
    bool ft;
    uint16_t basicsize, raw, buffer, buffer_size;
};

/* _io.StringIO: buf (Py_UCS4[buf_size], PyMem memory) and its objects: 3.11's _PyAccu lists
 * (accu_large, accu_small), 3.12-3.13's _PyUnicodeWriter's buffer string (writer_buffer; 3.14+
 * holds a PyUnicodeWriter *, not an object), decoder, readnl, writenl. */
struct ctl_stringio {
    int minor;
    bool ft;
    uint16_t basicsize, buf, buf_size, accu_large, accu_small, writer_buffer, decoder, readnl;
    uint16_t writenl;
};

struct ctl_partial {
    int minor;
    bool ft;
    uint16_t basicsize, fn, args, kw;
};

/* functools._lru_cache_wrapper (wrapped: the function, its __wrapped__) and the links of a bounded
 * cache (_lru_list_elem: the values of its cache dict). */
struct ctl_lru_wrapper {
    int minor;
    bool ft;
    uint16_t basicsize, cache, wrapped, kwd_mark, lru_list_elem_type, cache_info_type;
};

struct ctl_lru_elem {
    int minor;
    bool ft;
    uint16_t basicsize, key, result;
};

struct ctl_chain {
    int minor;
    bool ft;
    uint16_t basicsize, source, active;
};

struct ctl_cycle {
    int minor;
    bool ft;
    uint16_t basicsize, it, saved;
};

struct ctl_count {
    int minor;
    bool ft;
    uint16_t basicsize, long_cnt, long_step;
};

/* _io.BytesIO: buf, a bytes object (shared with the initial value until written). */
struct ctl_bytesio {
    int minor;
    bool ft;
    uint16_t basicsize, buf;
};

/* array.array: ob_item (allocated items), ob_descr (a static struct arraydescr, its item size an
 * int at descr_itemsize). */
struct ctl_array {
    int minor;
    bool ft;
    uint16_t basicsize, ob_item, allocated, ob_descr, descr_itemsize;
};

/* numpy.ndarray (PyArrayObject_fields): nd and flags are ints; owndata is NPY_ARRAY_OWNDATA. */
struct ctl_ndarray {
    int minor;
    bool ft;
    uint16_t basicsize, data, nd, dimensions, base, descr, flags, mem_handler, owndata;
};

/* numpy's descr (PyArray_Descr), told apart by the tp_basicsize of the numpy.dtype type: type_num
 * an int, elsize an int (1.x) or an npy_intp (2.x) of elsize_bytes. */
struct ctl_dtype {
    int minor; /* the Python it was probed on; 0: kept from a numpy no interpreter here has */
    bool ft;
    uint16_t numpy_major, dtype_basicsize, type_num, elsize, elsize_bytes, object_type_num;
};

/* _asyncio.Future and _asyncio.Task, one struct for both tables: a Task starts with a Future's
 * fields (FutureObj_HEAD); a Future's row has no task field. state is an int (enum fut_state);
 * awaited_by is 3.14+. */
struct ctl_future {
    int minor;
    bool ft;
    uint16_t basicsize, loop, callback0, context0, callbacks, exception, exception_tb, result;
    uint16_t source_tb, cancel_msg, state, cancelled_exc, awaited_by;
    uint16_t fut_waiter, coro, name, context; /* a Task's own */
};

extern const struct ctl_deque ctl_collections_deque[];
extern const size_t ctl_collections_deque_count;
extern const struct ctl_defaultdict ctl_collections_defaultdict[];
extern const size_t ctl_collections_defaultdict_count;
extern const struct ctl_odict ctl_collections_odict[];
extern const size_t ctl_collections_odict_count;
extern const struct ctl_buffered ctl_io_buffered[];
extern const size_t ctl_io_buffered_count;
extern const struct ctl_stringio ctl_io_stringio[];
extern const size_t ctl_io_stringio_count;
extern const struct ctl_partial ctl_functools_partial[];
extern const size_t ctl_functools_partial_count;
extern const struct ctl_lru_wrapper ctl_functools_lru_wrapper[];
extern const size_t ctl_functools_lru_wrapper_count;
extern const struct ctl_lru_elem ctl_functools_lru_elem[];
extern const size_t ctl_functools_lru_elem_count;
extern const struct ctl_chain ctl_itertools_chain[];
extern const size_t ctl_itertools_chain_count;
extern const struct ctl_cycle ctl_itertools_cycle[];
extern const size_t ctl_itertools_cycle_count;
extern const struct ctl_count ctl_itertools_count[];
extern const size_t ctl_itertools_count_count;
extern const struct ctl_bytesio ctl_io_bytesio[];
extern const size_t ctl_io_bytesio_count;
extern const struct ctl_array ctl_array_array[];
extern const size_t ctl_array_array_count;
extern const struct ctl_ndarray ctl_numpy_ndarray[];
extern const size_t ctl_numpy_ndarray_count;
extern const struct ctl_dtype ctl_numpy_dtype[];
extern const size_t ctl_numpy_dtype_count;
extern const struct ctl_future ctl_asyncio_future[];
extern const size_t ctl_asyncio_future_count;
extern const struct ctl_future ctl_asyncio_task[];
extern const size_t ctl_asyncio_task_count;

/* The row of (minor, ft) in a table of n rows of size bytes each (any ctl_ struct but ctl_dtype:
 * they all start with minor, ft and basicsize), or NULL. later: past the newest minor version the
 * table holds for that build, its newest row when every row of the build is the same (a layout
 * that has never changed, taken to hold on). */
const void *ctl_row(const void *table, size_t n, size_t size, int minor, bool ft, bool later);

/* A row's tp_basicsize (the member after minor and ft in every table but ctl_dtype). */
uint16_t ctl_basicsize(const void *row);

#define CTL_ROW(table, minor, ft, later)                                                          \
    ctl_row(table, table##_count, sizeof(table[0]), minor, ft, later)

#endif
