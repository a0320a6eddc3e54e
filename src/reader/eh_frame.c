/* Function ranges from .eh_frame_hdr's search table and the FDEs it points to (eh_frame.h).
 * Formats: the LSB's "Exception Frames" (.eh_frame, CIE/FDE records, the DW_EH_PE pointer
 * encodings) and ".eh_frame_hdr" (version 1: eh_frame_ptr, fde_count, then the sorted table of
 * (initial location, FDE address) pairs). */
#include "reader/eh_frame.h"

#include <string.h>

enum {
    PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* A cursor over the tables, reading through the callback a few bytes at a time. */
struct ehf_cur {
    ehf_read_fn read;
    void *ctx;
    uint64_t at;
    int failed;
};

static uint64_t get_bytes(struct ehf_cur *c, size_t n)
{
    uint8_t b[8] = {0};
    if (c->failed || c->read(c->ctx, c->at, b, n) < 0) {
        c->failed = 1;
        return 0;
    }
    c->at += n;
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | b[i - 1];
    return v;
}

static uint64_t get_uleb(struct ehf_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && !c->failed; shift += 7) {
        uint64_t b = get_bytes(c, 1);
        v |= (b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->failed = 1;
    return 0;
}

static int64_t get_sleb(struct ehf_cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint64_t b = 0x80;
    while ((b & 0x80) && shift < 64 && !c->failed) {
        b = get_bytes(c, 1);
        v |= (b & 0x7f) << shift;
        shift += 7;
    }
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A value in encoding enc's format (its low nibble), not applied to any base. */
static uint64_t get_value(struct ehf_cur *c, uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_ABSPTR: case PE_UDATA8: case PE_SDATA8: return get_bytes(c, 8);
    case PE_ULEB128: return get_uleb(c);
    case PE_SLEB128: return (uint64_t)get_sleb(c);
    case PE_UDATA2: return get_bytes(c, 2);
    case PE_SDATA2: return (uint64_t)(int64_t)(int16_t)get_bytes(c, 2);
    case PE_UDATA4: return get_bytes(c, 4);
    case PE_SDATA4: return (uint64_t)(int64_t)(int32_t)get_bytes(c, 4);
    default: c->failed = 1; return 0;
    }
}

/* A pointer in encoding enc: pc-relative ones from where the value lies, data-relative ones
 * from datarel (the start of .eh_frame_hdr). Indirect and other bases are not needed here. */
static uint64_t get_pointer(struct ehf_cur *c, uint8_t enc, uint64_t datarel)
{
    uint64_t here = c->at;
    uint64_t v = get_value(c, enc);
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += here; break;
    case PE_DATAREL: v += datarel; break;
    default: c->failed = 1;
    }
    if (enc & PE_INDIRECT)
        c->failed = 1;
    return v;
}

/* The FDE pointer encoding of the CIE at cie ('R' of its augmentation; absptr without one). */
static int cie_encoding(ehf_read_fn read, void *ctx, uint64_t cie, uint8_t *enc)
{
    struct ehf_cur c = {read, ctx, cie, 0};
    uint64_t len = get_bytes(&c, 4);
    if (len == 0xffffffffu)
        len = get_bytes(&c, 8);
    if (get_bytes(&c, 4) != 0 || c.failed) /* a CIE's id is 0 in .eh_frame */
        return -1;
    uint8_t version = (uint8_t)get_bytes(&c, 1);
    char aug[16];
    size_t n = 0;
    for (;;) {
        char ch = (char)get_bytes(&c, 1);
        if (c.failed || n + 1 >= sizeof(aug))
            return -1;
        aug[n++] = ch;
        if (!ch)
            break;
    }
    (void)get_uleb(&c); /* code alignment */
    (void)get_sleb(&c); /* data alignment */
    if (version == 1)
        (void)get_bytes(&c, 1); /* return address register */
    else
        (void)get_uleb(&c);
    *enc = PE_ABSPTR;
    if (aug[0] != 'z')
        return c.failed ? -1 : 0;
    (void)get_uleb(&c); /* augmentation data length */
    for (const char *p = aug + 1; *p && !c.failed; p++) {
        switch (*p) {
        case 'R': *enc = (uint8_t)get_bytes(&c, 1); return c.failed ? -1 : 0;
        case 'L': (void)get_bytes(&c, 1); break;
        case 'P': {
            uint8_t penc = (uint8_t)get_bytes(&c, 1);
            (void)get_value(&c, penc);
            break;
        }
        case 'S': case 'B': break;
        default: return -1; /* an augmentation whose data this reader cannot skip */
        }
    }
    return c.failed ? -1 : 0;
}

int ehf_largest_function(ehf_read_fn read, void *ctx, uint64_t hdr_addr, uint64_t *start,
                         uint64_t *end)
{
    struct ehf_cur c = {read, ctx, hdr_addr, 0};
    uint8_t version = (uint8_t)get_bytes(&c, 1);
    uint8_t ptr_enc = (uint8_t)get_bytes(&c, 1);
    uint8_t count_enc = (uint8_t)get_bytes(&c, 1);
    uint8_t table_enc = (uint8_t)get_bytes(&c, 1);
    if (c.failed || version != 1 || count_enc == PE_OMIT || table_enc == PE_OMIT)
        return -1;
    (void)get_pointer(&c, ptr_enc, hdr_addr);
    uint64_t count = get_pointer(&c, count_enc, hdr_addr);
    if (c.failed || count == 0 || count > (1u << 24))
        return -1;
    uint64_t best_start = 0, best_len = 0, last_cie = 0;
    uint8_t enc = 0;
    for (uint64_t i = 0; i < count && !c.failed; i++) {
        (void)get_pointer(&c, table_enc, hdr_addr); /* the initial location, again in the FDE */
        uint64_t fde = get_pointer(&c, table_enc, hdr_addr);
        struct ehf_cur f = {read, ctx, fde, 0};
        uint64_t len = get_bytes(&f, 4);
        if (len == 0xffffffffu)
            len = get_bytes(&f, 8);
        uint64_t id_at = f.at;
        uint64_t cie_off = get_bytes(&f, 4);
        if (f.failed || len == 0 || cie_off == 0 || cie_off > id_at)
            return -1;
        uint64_t cie = id_at - cie_off;
        if (cie != last_cie) {
            if (cie_encoding(read, ctx, cie, &enc) < 0)
                return -1;
            last_cie = cie;
        }
        uint64_t pc = get_pointer(&f, enc, hdr_addr);
        uint64_t range = get_value(&f, enc);
        if (f.failed)
            return -1;
        if (range > best_len) {
            best_len = range;
            best_start = pc;
        }
    }
    if (c.failed || best_len == 0)
        return -1;
    *start = best_start;
    *end = best_start + best_len;
    return 0;
}

int ehf_eval_loop(ehf_read_fn read, void *ctx, uint64_t hdr_addr,
                  const char *(*name_at)(void *ctx, uint64_t addr), uint64_t *start,
                  uint64_t *end)
{
    uint64_t s, e;
    if (ehf_largest_function(read, ctx, hdr_addr, &s, &e) < 0 || e - s < EHF_EVAL_LOOP_MIN)
        return -1;
    const char *name = name_at ? name_at(ctx, s) : NULL;
    if (name && strcmp(name, "_PyEval_EvalFrameDefault") != 0)
        return -1; /* the largest function has a name, and it is not the eval loop */
    *start = s;
    *end = e;
    return 0;
}
