/* The one place that knows how CPython chains its frames: where a thread's current frame is, which
 * frames of the _PyInterpreterFrame chain are Python code and which are the eval loop's entry
 * (shim) frames, the tagged code pointers of 3.14+ (_PyStackRef), which frames have not started
 * yet, the instruction a frame executes, and how much of a frame's value stack is in use. Driven by
 * struct py_layout (cpython/layout.h) for every supported version; no branch on the version.
 *
 * Everything here is async-signal-safe: no allocation, no lock, no errno change of its own; the
 * caller provides every buffer, and memory is read only through a struct py_mem, whose read
 * function decides how (a reader of another process or a core, the agent's fault-free read of its
 * own memory, a test's buffer). The agent's signal handler, `scry stacks` (cpython/frames.c) and
 * the heap walker all go through it. */
#ifndef SCRY_CPYTHON_FRAME_WALK_H
#define SCRY_CPYTHON_FRAME_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpython/layout.h"

/* Little-endian fields of a copied struct (x86-64 and arm64 targets). */
static inline uint64_t py_u64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int32_t py_i32_at(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Read access to the target's memory. read copies len bytes at addr into buf and returns true
 * when every byte was read; it never faults. An optional copy made beforehand (the agent copies
 * the used part of a thread's frame stack in one read) serves the reads that fall inside it. */
struct py_mem {
    bool (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    void *ctx;
    uint64_t copy_base; /* target address of copy[0] */
    const uint8_t *copy;
    size_t copy_len;
};

/* Reads len bytes at addr: from the copy when they are all inside it, else through read. */
bool py_mem_read(const struct py_mem *m, uint64_t addr, void *buf, size_t len);

/* What a walk needs beyond struct py_layout, derived once (py_fw_init). */
struct py_fw {
    const struct py_layout *L;
    uint64_t code_type;      /* address of PyCode_Type in the target */
    size_t frame_bytes;      /* bytes of a frame the walk reads (every field it uses) */
    size_t tstate_lo, tstate_hi; /* the span of the thread state holding the fields read */
    uint64_t co_nlocalsplus; /* int fields of a code object (0: unknown; then no frame is */
    uint64_t co_stacksize;   /* known to be above another) */
    uint64_t fr_stacktop;    /* the frame's value-stack top: an int slot count, or (3.14+) */
    bool fr_stackpointer;    /* a pointer to the first free slot; 0: unknown */
};

/* Fills fw from a layout, the heap walker's table of the same version (NULL: without it no
 * frame-above or value-stack answer) and PyCode_Type's address. Fails (-1) when the layout's
 * frame or thread-state fields do not fit the walker's bounds; 0 otherwise. */
int py_fw_init(struct py_fw *fw, const struct py_layout *L, const struct py_heap_layout *H,
               uint64_t code_type);

#define PY_FW_MAX_FRAME_BYTES 128 /* bound on frame_bytes */
#define PY_FW_MAX_TSTATE_SPAN 512 /* bound on the thread-state span read at once */

/* The thread-state fields a walk starts from, read at once. */
struct py_fw_thread {
    uint64_t native_id; /* the OS thread id */
    uint64_t frame;     /* the frame the thread is executing, or 0 */
    uint64_t chunk;     /* its current data-stack chunk, and the top of what is used in it */
    uint64_t top;       /* (0, 0 when the layout has none) */
};

/* Reads a thread state (tstate) and, on 3.11/3.12, its cframe. False when a read failed. */
bool py_fw_thread(const struct py_fw *fw, const struct py_mem *m, uint64_t tstate,
                  struct py_fw_thread *out);

/* A frame of the chain that runs Python code (entry/shim frames and frames without code are not
 * kept), innermost first. */
struct py_fw_frame {
    uint64_t addr;  /* the _PyInterpreterFrame */
    uint64_t code;  /* its code object (tag bits cleared), not yet checked to be one */
    uint64_t instr; /* the instruction pointer as the frame holds it */
    uint8_t owner;  /* FRAME_OWNED_BY_* */
    uint8_t group;  /* which C call of the eval loop runs it, counted from the innermost (0);
                       entry frames of calls that run no kept frame count too; at most 255 */
};

enum py_fw_flags {
    PY_FW_LIMIT = 1, /* more than max frames kept or max_steps frames read: the rest is cut */
    PY_FW_FAULT = 2, /* a frame could not be read: the walk ended there */
    PY_FW_CYCLE = 4, /* the chain loops: the walk ended before the first frame seen twice */
};

/* Walks the chain from frame (a thread's current frame, or a generator's) through f->previous,
 * keeping at most max frames and reading at most max_steps, into out. Returns how many were kept;
 * *flags gets enum py_fw_flags. */
size_t py_fw_walk(const struct py_fw *fw, const struct py_mem *m, uint64_t frame,
                  struct py_fw_frame *out, size_t max, size_t max_steps, unsigned *flags);

/* The code-unit index of the instruction a frame of code `code` executes. */
int64_t py_fw_lasti(const struct py_fw *fw, uint64_t code, uint64_t instr);

/* The facts of a code object a frame's visibility depends on, from its header (L->co_size bytes
 * read at the code address). */
struct py_fw_code {
    bool is_code; /* its type is PyCode_Type */
    int32_t firsttraceable;
    uint64_t nunits;
};
void py_fw_code_facts(const struct py_fw *fw, const uint8_t *header, struct py_fw_code *out);

/* Whether a frame shows in a stack, as CPython shows it: its code is a code object, the frame
 * has started (lasti at or after co_firsttraceable; a generator's frame always has) and its
 * instruction lies inside the code. */
bool py_fw_shown(const struct py_fw *fw, const struct py_fw_frame *f, const struct py_fw_code *c,
                 int64_t lasti);

/* True when the thread's frame stack goes on above its innermost frame f (in the current chunk
 * [chunk, top), code header `header`): a Python frame pushed but not running yet, or ended and
 * being cleared. */
bool py_fw_frame_above(const struct py_fw *fw, const struct py_fw_frame *f, const uint8_t *header,
                       uint64_t chunk, uint64_t top);

/* A _PyStackRef or plain object pointer read from a frame (f_executable, f_funcobj, a local or
 * a value-stack slot): the object's address, or 0 when it holds no object (NULL, or a tagged int
 * on 3.14+). */
uint64_t py_fw_object(const struct py_layout *L, uint64_t ref);

/* Slots of a suspended frame's localsplus in use (its nlocalsplus locals, then the value stack up
 * to its top), from the frame's bytes fr (fr_localsplus of them, read at frame_addr); -1 when
 * unknown, or out of range for a code of nlocalsplus + stacksize slots. */
int64_t py_fw_stack_used(const struct py_fw *fw, uint64_t frame_addr, const uint8_t *fr,
                         uint64_t nlocalsplus, int32_t stacksize);

#endif
