/* Private to src/reader: the reader object behind the public rd_* interface, the per-kind
 * operations table, and the helpers the kinds share (maps parsing, thread lists, ELF notes). */
#ifndef SCRY_READER_READER_IMPL_H
#define SCRY_READER_READER_IMPL_H

#include "common/arena.h"
#include "common/cursor.h"
#include "reader/reader.h"

struct rd_ops {
    int (*read)(struct rd_reader *rd, uint64_t addr, void *buf, size_t len);
    int (*pause)(struct rd_reader *rd);         /* NULL: nothing to do */
    void (*resume)(struct rd_reader *rd);       /* NULL: nothing to do */
    int (*threads)(struct rd_reader *rd);       /* refreshes rd->threads / rd->nthreads */
    void (*close)(struct rd_reader *rd);        /* frees priv; the rest is freed by rd_close */
};

struct rd_reader {
    enum rd_kind kind;
    const struct rd_ops *ops;
    int pid;
    struct arena arena;         /* paths and other strings that live as long as the reader */
    struct rd_mapping *maps;    /* sorted by start; malloc'd */
    size_t nmaps;
    const char *exe_path;       /* in arena, or NULL */
    const char *exe_target;     /* core: the executable's path as the core names it (or NULL) */
    const char *exe_override;   /* core: --exe (in arena), or NULL */
    struct rd_thread *threads;  /* malloc'd */
    size_t nthreads;
    void *priv;                 /* per-kind state */
};

/* Allocates a zeroed reader of the given kind (NULL when out of memory). */
struct rd_reader *rd_alloc(enum rd_kind kind, const struct rd_ops *ops);
/* Sets rd->exe_path from a /proc/.../exe link (left NULL if it cannot be read). */
void rd_set_exe_from_link(struct rd_reader *rd, const char *link);

/* Parses the text of a /proc/PID/maps file into a sorted array (malloc'd; paths in a). Lines
 * that do not parse are skipped. Returns 0 or -SCRY_E_NO_MEMORY. */
int rd_maps_parse_text(const char *text, size_t len, struct arena *a, struct rd_mapping **out,
                       size_t *count);
/* Reads /proc/<pid>/maps (pid 0: /proc/self/maps). Fails with no_such_process, permission_denied
 * or io_error. */
int rd_maps_read(int pid, struct arena *a, struct rd_mapping **out, size_t *count);
/* Reads a whole /proc file (which cannot be sized with stat) into a malloc'd NUL-terminated
 * buffer. Returns 0 or a negative errno (not an scry_err: callers choose the message). */
int rd_proc_slurp(const char *path, char **out, size_t *len);
/* Lists /proc/<pid>/task/<tid>/stat into rd->threads (sorted by tid). */
int rd_threads_proc(struct rd_reader *rd, int pid);
/* The state letter in the text of a /proc/.../stat file: the first non-space character after
 * the last ')' (comm may contain ')' and spaces); 0 if malformed. */
char rd_stat_state(const char *stat, size_t len);

/* One ELF note, pointing into the buffer being iterated. */
struct rd_note {
    uint32_t type;
    const char *name; /* not necessarily NUL-terminated: use namesz */
    size_t namesz;    /* without the trailing NUL, when there is one */
    const uint8_t *desc;
    size_t descsz;
};
/* Reads the next note from c (notes are padded to align: 4, or 8 for p_align 8). Returns false
 * at the end; c is failed if a note did not fit (a length that lies). */
bool rd_note_next(struct cursor *c, size_t align, struct rd_note *n);
bool rd_note_is(const struct rd_note *n, const char *name, uint32_t type);

#endif
