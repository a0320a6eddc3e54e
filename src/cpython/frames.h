/* Python stacks: walking a thread's _PyInterpreterFrame chain (skipping shim and incomplete
 * frames) and resolving code objects to file, qualified name and line. */
#ifndef SCRY_CPYTHON_FRAMES_H
#define SCRY_CPYTHON_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/hashmap.h"
#include "cpython/frame_walk.h"
#include "cpython/runtime.h"

#define PY_MAX_STACK_DEPTH 4096

struct py_code_info {
    uint64_t addr;
    const char *filename;
    const char *qualname;
    int firstlineno;
    const uint8_t *linetable;
    size_t linetable_len;
    uint64_t nunits; /* code units of bytecode */
    int32_t firsttraceable; /* co_firsttraceable: frames before it have not started */
    /* Identity: a code object's memory can be freed and reused by another code object, so a
     * cached entry is trusted only while these still match what the object holds. */
    uint64_t filename_obj, qualname_obj;
};

/* Code objects already resolved, by address; strings live in the arena. */
struct py_code_cache {
    struct hashmap by_addr; /* address -> struct py_code_info * */
    struct arena arena;
};

void py_code_cache_init(struct py_code_cache *cc);
void py_code_cache_free(struct py_code_cache *cc);
int py_code_resolve(struct py_runtime *rt, struct py_code_cache *cc, uint64_t code,
                    const struct py_code_info **out);
/* Drops the cached entry for a code address (its memory was reused); the next resolve reads it
 * afresh. */
void py_code_forget(struct py_code_cache *cc, uint64_t code);

/* The frame walker's facts (frame_walk.h) for the runtime's version; internal_error when its
 * layout does not fit the walker's bounds. */
int py_runtime_fw(const struct py_runtime *rt, struct py_fw *fw);

/* The walkers' memory interface (struct py_mem, ctx a struct py_reader_mem) over a reader; the
 * first error is kept. */
struct py_reader_mem {
    struct rd_reader *rd;
    int err;
};
bool py_reader_read(void *ctx, uint64_t addr, void *buf, size_t len);

struct py_frame {
    uint64_t addr; /* the _PyInterpreterFrame */
    const struct py_code_info *code;
    int64_t lasti; /* code-unit index of the instruction being executed */
    int line;      /* -1 when unknown */
    uint8_t group; /* which C call of the eval loop runs it, from the innermost (frame_walk.h) */
};

/* The Python frames of a thread, innermost first, as the frame walker (cpython/frame_walk.h) finds
 * them through the runtime's reader. *truncated is set when the stack was deeper than max (or
 * PY_MAX_STACK_DEPTH) or a loop was found in the chain. A frame that cannot be read ends the walk
 * with the reader's error, *count holding the frames before it. */
int py_thread_stack(struct py_runtime *rt, struct py_code_cache *cc, uint64_t tstate,
                    struct py_frame *frames, size_t max, size_t *count, bool *truncated);
/* The same over memory read through mem (the thread state and frames; a copy taken earlier, as
 * the allocation recorder's BPF program takes one): code objects are still resolved through the
 * runtime's reader. A fault ends the walk with read_failed, *count holding the frames before. */
int py_thread_stack_mem(struct py_runtime *rt, struct py_code_cache *cc, const struct py_mem *mem,
                        uint64_t tstate, struct py_frame *frames, size_t max, size_t *count,
                        bool *truncated);

#endif
